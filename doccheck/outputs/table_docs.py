"""The table contract in words: each report column's meaning, and ``docs/tables.md`` rendered
from the pyarrow schemas plus these meanings (``python -m doccheck.outputs.table_docs > docs/tables.md``).

Why generated: a hand-written page drifts from the schemas; ``tests/unit/outputs/test_table_docs.py``
fails when the page differs from what the schemas say, or when a column has no meaning here.
"""

from __future__ import annotations

import pyarrow as pa

from doccheck.outputs._parquet_reports import SCHEMAS
from doccheck.outputs._term_catalog import RUN_FILE, SCHEMA_VERSION, describe_views
from doccheck.outputs.instructor._documents_table import DOCUMENTS_SCHEMA

__all__ = ["MEANINGS", "render"]

_LMS = {
    "lms": "The LMS the export came from (canvas, moodle, blackboard); null for a manifest's rows.",
    "student_id": "The LMS's student id (a pseudonym under blind marking).",
    "student": "The student's display name, or the pseudonym under blind marking.",
    "late": "The LMS marked the submission late.",
    "attempt": "The LMS attempt number or label.",
    "submitted_file": "The file name the student submitted.",
    "email": "The student's email, from --roster; never under blind marking.",
    "section": "The student's section, from --roster.",
    "export_name": "The export's file or folder name: which download the row came from.",
    "new_this_run": "This run made the check (true) or reused an earlier run's (false); null without a check.",
}
_MONEY = {
    "charged_cents": "What the service charged for the check, on the first row of each check (0 on rows sharing it).",
    "refunded_cents": "What the service refunded for the check (failed products), on the first row of each check.",
    "net_cents": "charged_cents - refunded_cents: what the check cost; the column sums to the service's charge.",
    "cost_cents": "The same as net_cents (kept for readers of the first schema).",
}
_SENT_AS = (
    "original (the file, or a text row's text) or text (the service does not take the file's type: "
    "its extracted text was checked); null when nothing was sent."
)
_READ = {
    "read_as": "The type doccheck read the file as, from its bytes (pdf, docx, odt, rtf, doc, pptx, pages, txt, "
    "md, html); null when doccheck did not read the file (a text row; a file over 4 MB, other than plain text, "
    "sent as it is).",
    "named_as": "The type the file's name says (its extension without the dot); null for a text row.",
    "misnamed": "The file's name says another type than its bytes (e.g. an OpenDocument file named .docx, "
    "read as odt); null when the file was not read.",
}
_RESULT = {
    "document_id": "The manifest's (or LMS export's) document id.",
    "check_id": "The service's check id.",
    "status": "The product's state at the service: completed, failed, pending or processing.",
    "score": "The service's score (AI: 0..1 probability; similarity: percent of matched words).",
    "completed_at": "When the service finished the product (UTC).",
    "error_code": "The service's error code of a failed product.",
    "words": "Words the service counted.",
    "error_message": "The service's (or doccheck's) reason in words.",
    "contradiction": "A delivery that contradicted the final status, settled by fetching the check (empty when none).",
}

#: Table → column → meaning. ``documents_history`` is ``documents.parquet``.
MEANINGS: dict[str, dict[str, str]] = {
    "submissions": {
        "document_id": _RESULT["document_id"],
        "row_number": "The row's number in the manifest or export (1 = the first data row).",
        "mode": "How the document was sent: text, multipart, upload, or rejected.",
        "idempotency_key": "The deterministic key the check was created with (a rerun never creates a second check).",
        "check_id": _RESULT["check_id"],
        "products": "The products asked for (ai, similarity).",
        "status": "The submission's state: submitted, rejected, failed, unsent, skipped_budget, ...",
        "error_code": "Why the row was rejected or failed (a code).",
        "error_message": "Why the row was rejected or failed, in words (row, field and reason).",
        "words": "Words in the text sent.",
        "sent_as": _SENT_AS,
        **_READ,
        **_MONEY,
        **_LMS,
    },
    "ai_results": {
        **{
            k: _RESULT[k]
            for k in (
                "document_id",
                "check_id",
                "status",
                "score",
                "words",
                "completed_at",
                "error_code",
                "error_message",
                "contradiction",
            )
        },  # fmt: skip
        "label": "The service's AI label: human, mixed or ai.",
    },
    "similarity_results": {
        **{
            k: _RESULT[k]
            for k in (
                "document_id",
                "check_id",
                "status",
                "score",
                "completed_at",
                "error_code",
                "error_message",
                "contradiction",
            )
        },  # fmt: skip
        "matched_words": "Words of the document found in the sources.",
        "source_count": "How many sources matched.",
    },
    "similarity_sources": {
        "document_id": _RESULT["document_id"],
        "check_id": _RESULT["check_id"],
        "source_id": "The service's source id (a check id for another submission).",
        "title": "The source's title.",
        "url": "The source's address, when it has one.",
        "kind": "web, publication or submission.",
        "matched_words": "Words of the document found in this source.",
        "percent": "Percent of the document found in this source.",
        "matched_document_id": "The document of this campaign behind a submission source, when it is one of ours.",
    },
    "cohort_matches": {
        "document_id": "This run's document.",
        "matched_document_id": "The other document of the pair.",
        "kind": "identical, near_duplicate or copied_section.",
        "percent": "Overlap, percent of document_id's shingles.",
        "matched_percent": "Overlap, percent of matched_document_id's shingles.",
        "matched_words": "Words in the shared passages.",
        "jaccard": "Jaccard similarity of the two documents' shingles.",
        "run_id": "This run.",
        "matched_run_id": "The earlier run of matched_document_id; null when the same run.",
    },
    "documents_history": {
        "document_id": _RESULT["document_id"],
        "row_number": "The row's number in the manifest or export.",
        "name": "The document's name (the manifest's, or the file name).",
        "status": "Submission status: submitted, rejected, failed, unsent, skipped_budget, ...",
        "check_id": _RESULT["check_id"],
        "products": "The products asked for, ';'-separated.",
        "ai_status": "The AI product's state.",
        "ai_label": "The AI label: human, mixed or ai.",
        "ai_score": "The AI score (0..1).",
        "similarity_status": "The similarity product's state.",
        "similarity_score": "The similarity score (percent).",
        "similarity_matched_words": "Words found in the sources.",
        "top_source_title": "The source with most matched words: its title.",
        "top_source_url": "The top source's address.",
        "top_source_kind": "The top source's kind.",
        "product_notes": "A failed product in the service's words, and any contradicted result (empty when none).",
        "top_source_percent": "Percent of the document found in the top source.",
        "top_source_matched_document_id": "The document of this campaign behind the top source, when one of ours.",
        "cohort_match_count": "How many other documents of the cohort it matched.",
        "cohort_matched_document_ids": "Those documents, '; '-separated.",
        "flagged": "A reading aid, not a verdict: AI label/score or similarity or a cohort match (docs/instructor.md).",
        "error_code": "Why the row was rejected or failed (a code).",
        "error_message": "Why, in words.",
        "file_similarity_pdf": "The downloaded similarity report, relative to the run folder.",
        "file_pdf": "The downloaded PDF, relative to the run folder.",
        "file_original": "The downloaded original, relative to the run folder.",
        "ai_words": "The words the service counted (the length gate's input).",
        "ai_band": "too_short, low, elevated or high (null: no AI score yet).",
        "ai_note": "The length gate's reason, e.g. too short to judge.",
        "review_status": "A reviewer's decision: cleared, discussed or referred (null: not reviewed).",
        "review_note": "The reviewer's note.",
        "reviewed_by": "Who decided.",
        "reviewed_at": "When (ISO 8601, UTC).",
        "review_current": "The decision was about this version of the document.",
        "campaign": "The run's campaign.",
        "run_id": "The run that wrote this row.",
        "sent_as": _SENT_AS,
        "status_text": "The status in words: checked, checked as extracted text, or not checked: the reason; "
        "a misnamed file's words add what it was read as (read as OpenDocument text: the file is named .docx).",
        **_READ,
        **_MONEY,
        **_LMS,
    },
}

_CATALOG_COLUMNS = {
    "run_id": "The run (every catalog view has it, from the folder's run.json).",
    "campaign": "The run's campaign (every catalog view has it).",
}
_RUNS_VIEW = [
    ("run_id", "VARCHAR", "The run's id."),
    ("campaign", "VARCHAR", "Its campaign."),
    ("status", "VARCHAR", "finished, failed, submitted, ... (the ledger's, when the folder was written)."),
    ("started_at", "TIMESTAMPTZ", "When the run started."),
    ("finished_at", "TIMESTAMPTZ", "When it finished."),
    ("documents", "BIGINT", "Rows of its documents table."),
    ("new_checks", "BIGINT", "Checks this run created (new_this_run)."),
    ("charged_cents", "BIGINT", "What the service charged for those new checks."),
    ("report_folder", "VARCHAR", "Its report folder, relative to the catalog."),
    ("schema_version", "INTEGER", "The table contract version the folder was written with."),
]


def _type(type_: pa.DataType) -> str:
    return str(type_).replace("timestamp[ms, tz=UTC]", "timestamp (ms, UTC)")


def _meaning(table: str, column: str) -> str:
    meaning = MEANINGS[table].get(column)
    if meaning is None:
        raise KeyError(f"column {column!r} of {table} has no meaning in doccheck.outputs.table_docs.MEANINGS")
    return meaning


def render() -> str:
    """The whole ``docs/tables.md``."""
    views = describe_views()
    lines = [
        "# Tables and views",
        "",
        "<!-- Generated by `python -m doccheck.outputs.table_docs > docs/tables.md`; "
        "tests/unit/outputs/test_table_docs.py fails when it differs. -->",
        "",
        f"Table contract version **{SCHEMA_VERSION}**: each run folder's `{RUN_FILE}` says the version it was "
        "written with (and its run id, campaign, times). A column may be added without a new version (read "
        "old and new folders together with `union_by_name`); a removed or redefined column raises it.",
        "Every report table also carries the manifest's allowlisted metadata as `meta_<column>` string columns.",
        "",
        "## `runs` (catalog view)",
        "",
        views["runs"],
        "",
        "| column | type | meaning |",
        "|---|---|---|",
        *(f"| `{n}` | {t} | {m} |" for n, t, m in _RUNS_VIEW),
        "",
        "## `documents` (catalog view)",
        "",
        views["documents"] + " Same columns as `documents_history`.",
        "",
    ]
    schemas = {**SCHEMAS, "documents_history": DOCUMENTS_SCHEMA}
    for table, schema in schemas.items():
        file = "documents.parquet" if table == "documents_history" else f"{table}.parquet"
        lines += [f"## `{table}` (`{file}` of each run folder)", "", views[table], "", "| column | type | meaning |",
                  "|---|---|---|"]  # fmt: skip
        lines += [f"| `{n}` | string | {m} (catalog view only) |" for n, m in _CATALOG_COLUMNS.items()
                  if n not in schema.names]  # fmt: skip
        lines += [f"| `{f.name}` | {_type(f.type)} | {_meaning(table, f.name)} |" for f in schema]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
