"""The per-student wide table: one row per document, everything an instructor looks at.

Why a table of its own: the four Parquet reports are normalised for data teams (one row
per product, one per source); an instructor, a gradebook import or a spreadsheet wants ONE
row per student. The column names and types are fixed by :data:`DOCUMENTS_SCHEMA` (an
empty run still has them); the allowlisted manifest metadata follows as ``meta_<column>``
string columns, as in the Parquet reports, so it can never clash with a fixed column.

``flagged`` is a reading aid, not a verdict (and not raised again once a reviewer cleared
this version of the document, :func:`apply_dispositions`): a document is flagged when its AI label is
``ai`` or ``mixed`` or its AI score is at least the run's threshold (:class:`AiRules`,
default :data:`FLAG_AI_SCORE`), unless it is too short to judge (``ai_band`` ``too_short``:
never AI-flagged); when its similarity score is at least :data:`FLAG_SIMILARITY_SCORE`; or
when it matches another document of the cohort.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from doccheck.ledger import Disposition
from doccheck.outputs._calibration import AiRules
from doccheck.outputs._lms_columns import LMS_FIELDS, NEW_FIELD, lms_values
from doccheck.outputs._parquet_reports import META_PREFIX
from doccheck.outputs._said import status_text

__all__ = [
    "DOCUMENTS_CSV",
    "DOCUMENTS_PARQUET",
    "DOCUMENTS_SCHEMA",
    "FILE_COLUMNS",
    "DocumentsBuilder",
    "TopSources",
    "FLAG_AI_SCORE",
    "FLAG_SIMILARITY_SCORE",
    "build_documents",
    "checks_to_documents",
    "documents_schema",
    "documents_table",
]

#: The wide table's files in a run folder.
DOCUMENTS_PARQUET = "documents.parquet"
DOCUMENTS_CSV = "documents.csv"

#: Thresholds of ``flagged`` (stated in the report's legend).
FLAG_AI_SCORE = 0.5
FLAG_SIMILARITY_SCORE = 25.0

#: File kind → column holding its path relative to the run folder (null when absent).
FILE_COLUMNS: dict[str, str] = {
    "similarity_pdf": "file_similarity_pdf",
    "pdf": "file_pdf",
    "original": "file_original",
}

# --- AI judging (issue 25): the length gate and the band; see doccheck.outputs._calibration ---
JUDGING_FIELDS = [
    pa.field("ai_words", pa.int64()),  # the words the service counted (the gate's input)
    pa.field("ai_band", pa.string()),  # too_short | low | elevated | high (null: no AI score yet)
    pa.field("ai_note", pa.string()),  # the gate's reason, e.g. "too short to judge (212 words < 300)"
]


def judging_columns(ai: Mapping[str, Any], sub: Mapping[str, Any], rules: AiRules) -> dict[str, Any]:
    """The :data:`JUDGING_FIELDS` of one document (its AI result row and submissions row)."""
    words = ai.get("words") if ai.get("words") is not None else sub.get("words")
    words = None if words is None else int(words)
    band = rules.band(_float(ai.get("score")), words)
    note = f"too short to judge ({words} words < {rules.bounds.min_words})" if band == "too_short" else None
    return {"ai_words": words, "ai_band": band, "ai_note": note}


# --- end AI judging ---

# --- review dispositions (issue 25): doccheck review's decisions; see doccheck.ledger._dispositions ---
REVIEW_FIELDS = [
    pa.field("review_status", pa.string()),  # cleared | discussed | referred (null: not reviewed)
    pa.field("review_note", pa.string()),
    pa.field("reviewed_by", pa.string()),
    pa.field("reviewed_at", pa.string()),  # ISO 8601, UTC
    pa.field("review_current", pa.bool_()),  # the decision was about this version of the document
]


def apply_dispositions(rows: Iterable[dict[str, Any]], dispositions: Mapping[str, Disposition]) -> None:
    """Fill the :data:`REVIEW_FIELDS` of these rows; a flag cleared for this very version is not raised again."""
    for row in rows:
        decided = dispositions.get(str(row.get("document_id")))
        if decided is None:
            continue
        row.update(review_status=decided.status, review_note=decided.note, reviewed_by=decided.decided_by,
                   reviewed_at=decided.decided_at.isoformat(timespec="seconds"),
                   review_current=decided.current)  # fmt: skip
        if decided.status == "cleared" and decided.current:
            row["flagged"] = False


# --- end review dispositions ---

# --- the term's catalog (issue 40): a row's run and its money as the service counts it ---
RUN_FIELDS = [
    pa.field("campaign", pa.string()),
    pa.field("run_id", pa.string()),
    # the check's money on the first row of each check only (rows sharing a check show 0), as in submissions
    pa.field("charged_cents", pa.int64()),
    pa.field("refunded_cents", pa.int64()),
    pa.field("net_cents", pa.int64()),
]
# --- end the term's catalog ---

DOCUMENTS_SCHEMA = pa.schema(
    [
        pa.field("document_id", pa.string()),
        pa.field("row_number", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("status", pa.string()),  # submission status: submitted | rejected | failed | unsent | skipped_budget
        pa.field("check_id", pa.string()),
        pa.field("products", pa.string()),  # "ai;similarity"
        pa.field("ai_status", pa.string()),
        pa.field("ai_label", pa.string()),
        pa.field("ai_score", pa.float64()),
        pa.field("similarity_status", pa.string()),
        pa.field("similarity_score", pa.float64()),
        pa.field("similarity_matched_words", pa.int64()),
        pa.field("top_source_title", pa.string()),
        pa.field("top_source_url", pa.string()),
        pa.field("top_source_kind", pa.string()),
        pa.field("top_source_percent", pa.float64()),
        pa.field("top_source_matched_document_id", pa.string()),
        pa.field("cohort_match_count", pa.int64()),
        pa.field("cohort_matched_document_ids", pa.string()),  # "; "-separated
        pa.field("flagged", pa.bool_()),
        pa.field("cost_cents", pa.int64()),
        pa.field("error_code", pa.string()),
        pa.field("error_message", pa.string()),
        # a failed product in the service's words, and a delivery that contradicted a result
        pa.field("product_notes", pa.string()),
        *(pa.field(column, pa.string()) for column in FILE_COLUMNS.values()),
        *LMS_FIELDS,  # an LMS export's student columns, copied from submissions (null for a manifest's rows)
        NEW_FIELD,  # new_this_run, copied from submissions
        *JUDGING_FIELDS,
        *REVIEW_FIELDS,
        *RUN_FIELDS,
        # issue 41: how it was sent (original | text: the file's extracted text) and the status in words
        pa.field("sent_as", pa.string()),
        pa.field("status_text", pa.string()),  # checked | checked as extracted text | not checked: <reason>
        # what the file was read as (odt), the type its name says (docx), whether they differ (issue 41)
        pa.field("read_as", pa.string()),
        pa.field("named_as", pa.string()),
        pa.field("misnamed", pa.bool_()),
    ]
)


def _float(value: Any) -> float | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return float(value)


def _products(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return ";".join(str(v) for v in value)


def _cohort_index(cohort_matches: Iterable[Mapping[str, Any]] | None) -> dict[str, list[str]]:
    """document_id → the other documents it was matched with (both directions, de-duplicated)."""
    index: dict[str, list[str]] = {}
    for row in cohort_matches or []:
        a, b = row.get("document_id"), row.get("matched_document_id")
        if a is None or b is None or a == b:
            continue
        for left, right in ((str(a), str(b)), (str(b), str(a))):
            peers = index.setdefault(left, [])
            if right not in peers:
                peers.append(right)
    return index


def is_flagged(row: Mapping[str, Any], rules: AiRules | None = None) -> bool:
    """The ``flagged`` rule of the module docstring (``rules``: the run's; default bounds)."""
    rules = rules or AiRules()
    ai_score = _float(row.get("ai_score"))
    sim_score = _float(row.get("similarity_score"))
    judged = row.get("ai_band") != "too_short" and not rules.too_short(row.get("ai_words"))
    return bool(
        (judged and row.get("ai_label") in ("ai", "mixed"))
        or (judged and ai_score is not None and ai_score >= rules.threshold)
        or (sim_score is not None and sim_score >= FLAG_SIMILARITY_SCORE)
        or (row.get("cohort_match_count") or 0) > 0
    )


class DocumentsBuilder:
    """Builds the wide rows chunk by chunk from per-document lookups.

    The lookups hold only what a wide row takes from the product and source tables (the
    AI and similarity columns, the top source of each document, the cohort peers, the
    check → document index), so a run's wide table can be written in chunks of
    submissions without holding every report row, or every wide row, at once.
    """

    def __init__(
        self,
        *,
        ai: Mapping[Any, Mapping[str, Any]],
        sim: Mapping[Any, Mapping[str, Any]],
        top_sources: Mapping[Any, Mapping[str, Any]],
        document_of_check: Mapping[str, str],
        names: Mapping[str, str] | None = None,
        cohort_matches: Iterable[Mapping[str, Any]] | None = None,
        rules: AiRules | None = None,
    ) -> None:
        self._ai, self._sim, self._top = ai, sim, top_sources
        self._document_of_check = document_of_check
        self._names = names or {}
        self._cohort = _cohort_index(cohort_matches)
        self.rules = rules or AiRules()

    def with_lookups(
        self,
        *,
        ai: Mapping[Any, Mapping[str, Any]],
        sim: Mapping[Any, Mapping[str, Any]],
        top_sources: Mapping[Any, Mapping[str, Any]],
        document_of_check: Mapping[str, str],
    ) -> DocumentsBuilder:
        """The same builder (names, cohort) with the lookups of one chunk of documents."""
        other = copy.copy(self)
        other._ai, other._sim, other._top, other._document_of_check = ai, sim, top_sources, document_of_check
        return other

    def with_names(self, names: Mapping[str, str]) -> DocumentsBuilder:
        """The same builder with these names (one chunk's, read from the ledger)."""
        other = copy.copy(self)
        other._names = names
        return other

    @classmethod
    def from_tables(
        cls,
        tables: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        names: Mapping[str, str] | None = None,
        cohort_matches: Sequence[Mapping[str, Any]] | None = None,
        rules: AiRules | None = None,
    ) -> DocumentsBuilder:
        """Lookups from whole report tables (row dicts in memory)."""
        sources = TopSources()
        sources.add(tables.get("similarity_sources", []))
        return cls(
            ai={r.get("document_id"): r for r in tables.get("ai_results", [])},
            sim={r.get("document_id"): r for r in tables.get("similarity_results", [])},
            top_sources=sources.best,
            document_of_check=checks_to_documents(tables.get("submissions", [])),
            names=names,
            cohort_matches=cohort_matches,
            rules=rules,
        )

    def rows(
        self, submissions: Iterable[Mapping[str, Any]], files: Mapping[str, Mapping[str, str]] | None = None
    ) -> list[dict[str, Any]]:
        """The wide rows of these submissions rows (in their order)."""
        out: list[dict[str, Any]] = []
        keys: set[str] = set()  # the last row's columns, and which of them are metadata
        meta: list[str] = []
        for sub in submissions:
            if sub.keys() != keys:  # the rows of one table share their columns: found once
                keys, meta = set(sub), [k for k in sub if k.startswith(META_PREFIX)]
            doc = sub.get("document_id")
            a, s = self._ai.get(doc, {}), self._sim.get(doc, {})
            peers = self._cohort.get(str(doc), []) if doc is not None else []
            row: dict[str, Any] = {
                "document_id": doc,
                "row_number": sub.get("row_number"),
                "name": self._names.get(doc) if doc is not None else None,
                "status": sub.get("status"),
                "check_id": sub.get("check_id"),
                "products": _products(sub.get("products")),
                "ai_status": a.get("status"),
                "ai_label": a.get("label"),
                "ai_score": _float(a.get("score")),
                "similarity_status": s.get("status"),
                "similarity_score": _float(s.get("score")),
                "similarity_matched_words": s.get("matched_words"),
                **_top_source_columns(self._top.get(doc), self._document_of_check),
                "cohort_match_count": len(peers),
                "cohort_matched_document_ids": "; ".join(peers) or None,
                "cost_cents": sub.get("cost_cents"),
                "charged_cents": sub.get("charged_cents"),
                "refunded_cents": sub.get("refunded_cents"),
                "net_cents": sub.get("net_cents"),
                "error_code": sub.get("error_code"),
                "error_message": sub.get("error_message"),
                "product_notes": product_notes({"ai": a, "similarity": s}),
            }
            row.update(judging_columns(a, sub, self.rules))
            row["sent_as"] = sub.get("sent_as")
            row.update({k: sub.get(k) for k in ("read_as", "named_as", "misnamed")})
            row["status_text"] = status_text(row)
            row["flagged"] = is_flagged(row, self.rules)
            row.update(lms_values(sub))  # the LMS columns (doccheck.outputs._lms_columns)
            doc_files = (files or {}).get(doc, {}) if doc is not None else {}
            for kind, column in FILE_COLUMNS.items():
                row[column] = doc_files.get(kind)
            for key in meta:
                value = sub[key]
                row[key] = None if value is None else str(value)
            out.append(row)
        return out


def product_notes(results: Mapping[str, Mapping[str, Any]]) -> str | None:
    """What the page says beside a document about its products: a failure in the service's
    own words (code and message, whatever shape its ``error`` had) and a contradicted result."""
    notes: list[str] = []
    for product, r in results.items():
        if r.get("status") == "failed":
            words = ": ".join(str(w) for w in (r.get("error_code"), r.get("error_message")) if w)
            notes.append(f"{product} failed: {words or 'no reason given'}")
        if r.get("contradiction"):
            notes.append(f"{product}: {r['contradiction']}")
    return "; ".join(notes) or None


class TopSources:
    """The top source of each document (most matched words, then highest percent; the first
    of equals), folded over source rows given in any number of chunks."""

    def __init__(self) -> None:
        self.best: dict[Any, Mapping[str, Any]] = {}

    def add(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Fold these source rows in."""
        for r in rows:
            doc = r.get("document_id")
            current = self.best.get(doc)
            if current is None or _source_key(r) > _source_key(current):
                self.best[doc] = r


def _source_key(source: Mapping[str, Any]) -> tuple[int, float]:
    return int(source.get("matched_words") or 0), _float(source.get("percent")) or 0.0


def checks_to_documents(submissions: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """check id → document_id of the submissions rows that have a check (the last wins)."""
    return {str(r["check_id"]): str(r.get("document_id")) for r in submissions if r.get("check_id")}


def _top_source_columns(best: Mapping[str, Any] | None, document_of_check: Mapping[str, str]) -> dict[str, Any]:
    if not best:
        return {}
    matched = best.get("matched_document_id")
    if not matched and best.get("kind") == "submission":
        # The service names an earlier submission by its check id; of this run, we know whose it is.
        matched = document_of_check.get(str(best.get("source_id")))
    return {
        "top_source_title": best.get("title"),
        "top_source_url": best.get("url"),
        "top_source_kind": best.get("kind"),
        "top_source_percent": _float(best.get("percent")),
        "top_source_matched_document_id": matched,
    }


def build_documents(
    tables: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    names: Mapping[str, str] | None = None,
    cohort_matches: Sequence[Mapping[str, Any]] | None = None,
    files: Mapping[str, Mapping[str, str]] | None = None,
    rules: AiRules | None = None,
) -> list[dict[str, Any]]:
    """One dict per document (report order), keys of :data:`DOCUMENTS_SCHEMA` plus ``meta_*``.

    ``tables``: the report rows (``submissions`` with its ``meta_*`` columns, the product
    and source tables); ``names``: document_id → name; ``cohort_matches``: rows with
    ``document_id`` and ``matched_document_id``; ``files``: document_id → {kind: relative path};
    ``rules``: the run's AI rules (default bounds when not given).
    """
    builder = DocumentsBuilder.from_tables(tables, names=names, cohort_matches=cohort_matches, rules=rules)
    return builder.rows(tables.get("submissions", []), files)


def documents_schema(meta: Iterable[str]) -> pa.Schema:
    """:data:`DOCUMENTS_SCHEMA` followed by these ``meta_*`` string columns."""
    return pa.schema([*DOCUMENTS_SCHEMA, *(pa.field(m, pa.string()) for m in meta)])


def documents_table(rows: Sequence[Mapping[str, Any]], schema: pa.Schema | None = None) -> pa.Table:
    """The rows as a pyarrow table: :data:`DOCUMENTS_SCHEMA`, then ``meta_*`` string columns
    in first-seen order (or ``schema``, when the caller writes chunks of one table)."""
    if schema is None:
        meta: list[str] = []
        for row in rows:
            for key in row:
                if key.startswith(META_PREFIX) and key not in meta:
                    meta.append(key)
        schema = documents_schema(meta)
    try:  # Arrow's own conversion, twice as fast as a list per column (a 100,000-row run: 0.5 -> 0.2 s)
        return pa.Table.from_pylist(list(rows), schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # e.g. a count given as text or a bool: int() below
        pass
    arrays = []
    for fld in schema:
        values = [row.get(fld.name) for row in rows]
        if pa.types.is_integer(fld.type):
            values = [None if v is None else int(v) for v in values]
        arrays.append(pa.array(values, type=fld.type))
    return pa.Table.from_arrays(arrays, schema=schema)
