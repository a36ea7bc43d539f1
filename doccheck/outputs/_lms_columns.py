"""The LMS columns of the reports: who submitted each document of an export, and what was not checked.

A run of an LMS export reads the manifest derived from it; the students' names and ids are
not in what the run sends nor in the ledger's metadata (``--metadata-columns`` decides that).
They are in the export's sidecar (:func:`doccheck.sources.lms.read_sidecar`) beside the derived
manifest the run recorded, and joined here by ``document_id`` into ``submissions.parquet``
(and from it ``documents.parquet``/``.csv``): ``lms, student_id, student, late, attempt,
submitted_file`` and the roster's ``email, section``. Null for a manifest's rows.

Three kinds of rows come only from the sidecar, after the run's own rows: the export's refused
entries (``status = rejected``, their code and reason naming the entry and the student, cost
0), its entries listed but not checked (``status = not_a_document`` for a link or receipt,
``superseded`` for an older attempt; no document id, cost 0) and the roster's students without
work (``status = no_submission``, no document, cost 0). Every row of an export also carries
``export_name``, the export's file or folder name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

__all__ = [
    "LMS_FIELDS",
    "NEW_FIELD",
    "NOT_A_DOCUMENT",
    "NO_SUBMISSION",
    "SUPERSEDED",
    "lms_rows",
    "lms_values",
    "mark_new",
    "run_sidecar",
]

#: The columns added to ``submissions`` and ``documents`` (in this order, after the fixed ones).
LMS_FIELDS = (
    pa.field("lms", pa.string()),
    pa.field("student_id", pa.string()),
    pa.field("student", pa.string()),  # the display name, or the pseudonym under blind marking
    pa.field("late", pa.bool_()),
    pa.field("attempt", pa.string()),
    pa.field("submitted_file", pa.string()),
    pa.field("email", pa.string()),  # from --roster; never under blind marking
    pa.field("section", pa.string()),  # from --roster
    pa.field("export_name", pa.string()),  # the export's file or folder name: which download the row came from
)
#: Whether this run made the document's check (new or changed work) or reused an earlier run's
#: (unchanged work of a later download: free); null without a check. Every run has it.
NEW_FIELD = pa.field("new_this_run", pa.bool_())
_NAMES = tuple(f.name for f in LMS_FIELDS)
#: ``status`` of a roster student with no document in the export.
NO_SUBMISSION = "no_submission"
#: ``status`` of an export's entry that is not a document: a Canvas URL submission
#: (``error_code = link``) or a Blackboard attempt receipt (``receipt``). Never sent.
NOT_A_DOCUMENT = "not_a_document"
#: ``status`` of an older Blackboard attempt's file or receipt (``error_code = older_attempt``),
#: left out because the latest attempt is checked (``--attempts all`` checks it too).
SUPERSEDED = "superseded"
_ZERO = {"cost_cents": 0, "charged_cents": 0, "refunded_cents": 0, "net_cents": 0}


def lms_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """The LMS columns of a report row (null when it has none): what the wide table copies."""
    return {name: row.get(name) for name in (*_NAMES, NEW_FIELD.name)}


def run_sidecar(ledger: Any, run_id: str) -> dict[str, Any] | None:
    """The sidecar of the manifest ``run_id`` recorded (None for a manifest that is not an export's)."""
    from doccheck.sources.lms import read_sidecar

    run = ledger.get_run(run_id)
    return read_sidecar(run.manifest if run is not None else None)


def lms_rows(
    chunks: Iterable[Mapping[str, list[dict[str, Any]]]], sidecar: Mapping[str, Any] | None
) -> Iterator[Mapping[str, list[dict[str, Any]]]]:
    """``chunks`` with the LMS columns joined into their submissions rows, then the sidecar's
    refused entries and students without work as submissions rows of their own."""
    if not sidecar:
        yield from chunks
        return
    documents: Mapping[str, Mapping[str, Any]] = sidecar.get("documents") or {}
    export = {"export_name": sidecar.get("export_name")}
    for part in chunks:
        subs = part.get("submissions")
        if not subs:
            yield part
            continue
        joined = [{**row, **_known(documents.get(str(row.get("document_id"))), export)} for row in subs]
        yield {**part, "submissions": joined}
    extra = [_refused_row(r, export) for r in sidecar.get("rejected") or []]
    extra += [_listed_row(r, export) for r in sidecar.get("not_checked") or []]
    extra += [{**_known(r, export), "status": NO_SUBMISSION, "mode": None, "products": [], **_ZERO}
              for r in sidecar.get("no_submission") or []]  # fmt: skip
    if extra:
        yield {"submissions": extra}


def mark_new(
    chunks: Iterable[Mapping[str, list[dict[str, Any]]]], ledger: Any, run_id: str
) -> Iterator[Mapping[str, list[dict[str, Any]]]]:
    """``chunks`` with ``new_this_run`` on their submissions rows: true when the row's check was
    submitted while this run ran (between its start and its end), false when it is older. The
    rows are marked in place (the chunks of :func:`~doccheck.ledger.iter_report_chunks`
    are built for their one reader)."""
    from doccheck.ledger import LEDGER_PART, submitted_times

    run = ledger.get_run(run_id)
    window = (_aware(run.started_at), _aware(run.finished_at)) if run is not None else None
    for part in chunks:
        subs = part.get("submissions")
        keys = [str(r["idempotency_key"]) for r in subs or [] if r.get("check_id") and r.get("idempotency_key")]
        if not keys or window is None:
            yield part
            continue
        if (read := part.get(LEDGER_PART)) is not None:  # the chunk read its keys' times already
            when = {r["idempotency_key"]: r["submitted_at"] for r in read}
        else:
            with ledger.session() as s:
                when = submitted_times(s, keys)
        for r in subs or []:  # marked in place: a chunk's rows are its own (a copy a row: ~1 s of a 100k report)
            if r.get("check_id"):
                r[NEW_FIELD.name] = _within(when.get(str(r.get("idempotency_key"))), window)
        yield part


def _within(moment: datetime | None, window: tuple[datetime | None, datetime | None]) -> bool | None:
    """Whether ``moment`` is in the run's ``window`` (both ends made UTC-aware once, by the caller)."""
    if moment is None:
        return None
    start, end = window
    at = _aware(moment)
    assert at is not None and start is not None
    return start <= at and (end is None or at <= end)


def _aware(moment: datetime | None) -> datetime | None:
    """UTC-aware (a ledger may hand back naive UTC)."""
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def _known(values: Mapping[str, Any] | None, export: Mapping[str, Any]) -> dict[str, Any]:
    return {name: values.get(name) for name in _NAMES} | dict(export) if values else {}


def _listed_row(r: Mapping[str, Any], export: Mapping[str, Any]) -> dict[str, Any]:
    """A link, receipt or older attempt: listed with what it is, its student and why; never sent, cost 0."""
    return {
        **_known(r, export),
        "document_id": None,
        "mode": None,
        "status": SUPERSEDED if r.get("kind") == "superseded" else NOT_A_DOCUMENT,
        "products": [],
        "error_code": r.get("code"),
        "error_message": r.get("reason"),
        **_ZERO,
    }


def _refused_row(r: Mapping[str, Any], export: Mapping[str, Any]) -> dict[str, Any]:
    """A refused entry of the export: a rejected row that names it, its student and why; cost 0."""
    return {
        **_known(r, export),
        "document_id": r.get("document_id"),
        "mode": "rejected",
        "status": "rejected",
        "products": [],
        "error_code": r.get("code"),
        "error_message": r.get("reason"),
        **_ZERO,
    }
