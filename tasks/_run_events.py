"""Prefect events a run emits, so that users can wire automations (e.g. tell the course lead).

- ``doccheck.document.flagged``: one per flagged document of the run's page (AI band,
  similarity or a cohort match, and no review cleared it), about the resource
  ``doccheck.document.<campaign>.<document id>`` with the campaign and the run as related
  resources. It carries ids and the reasons only: no name, no text, no score.
- ``doccheck.run.completed`` (every product final) or ``doccheck.run.incomplete`` (results
  still pending, documents left unsent, or the run stopped): one per run (and per collect),
  about ``doccheck.run.<run id>``, with the counts, including how many documents are flagged.
- ``prefect.asset.materialization.succeeded``: one per table the run wrote
  (:mod:`prefect_doccheck.tasks._assets`). Every event is listed in docs/events.md.

Bounded: a run of 20,000 documents may flag thousands, and an event each would flood the
event feed and every automation watching it. So at most :data:`MAX_FLAG_EVENTS` documents
get their own event (the first in the page's order); the run's event always says how many
are flagged in all (``flagged``) and how many had an event (``flag_events``), so an
automation that wants the total watches the run event. A flagged event's id is derived from
(run, document): a collect that finds the same document still flagged sends the same id
again (the server keeps one); the library never imports Prefect, so this lives here.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pyarrow.parquet as pq
from prefect.events import emit_event

from doccheck.outputs import AiRules
from doccheck.outputs.instructor import FLAG_SIMILARITY_SCORE
from doccheck.pipeline import RunSummary
from doccheck.storage import UserPath, open_input, resolve
from prefect_doccheck.tasks._assets import emit_table_assets

log = logging.getLogger("doccheck.flows")

__all__ = ["FLAGGED", "MAX_FLAG_EVENTS", "RUN_COMPLETED", "RUN_INCOMPLETE", "emit_run_events", "flagged_documents"]

FLAGGED = "doccheck.document.flagged"
RUN_COMPLETED = "doccheck.run.completed"
RUN_INCOMPLETE = "doccheck.run.incomplete"
#: Flagged documents that get an event of their own, per run (the run event counts them all).
MAX_FLAG_EVENTS = 100
#: Namespace of the uuid5 that names a flagged event after its run and document.
_NAMESPACE = uuid.UUID("6f1c1d1e-8b0a-4e55-9d1e-d0cc4ecc0025")
#: documents.parquet columns that say why a row is flagged (never a name or a text).
_COLUMNS = ("document_id", "flagged", "ai_band", "ai_label", "ai_score", "similarity_score", "cohort_match_count")


def flagged_documents(run_dir: str | UserPath, limit: int = MAX_FLAG_EVENTS) -> tuple[list[dict[str, Any]], int]:
    """The first ``limit`` flagged rows of the run folder's ``documents.parquet`` (the
    columns that say why) and how many rows are flagged in all; read in record batches
    (a run folder on a store is read in blocks, never whole)."""
    path = resolve(run_dir) / "documents.parquet"
    if not path.is_file():
        return [], 0
    first: list[dict[str, Any]] = []
    total = 0
    with open_input(path) as stream:
        source = pq.ParquetFile(stream)
        columns = [c for c in _COLUMNS if c in source.schema_arrow.names]
        for batch in source.iter_batches(batch_size=5000, columns=columns, use_threads=False):
            for row in batch.to_pylist():
                if not row.get("flagged"):
                    continue
                total += 1
                if len(first) < limit:
                    first.append(row)
    return first, total


def _threshold(run_dir: str | UserPath) -> float:
    """The AI flag threshold the page used (``calibration.json``; the default bound without it)."""
    try:
        return float(json.loads((resolve(run_dir) / "calibration.json").read_text(encoding="utf-8"))["threshold"])
    except (OSError, ValueError, KeyError, TypeError):
        return AiRules().threshold


def _reasons(row: dict[str, Any], threshold: float) -> list[str]:
    """Why the page flagged the row (the rule of ``doccheck.outputs.instructor.is_flagged``)."""
    reasons = []
    judged = row.get("ai_band") != "too_short"
    score = row.get("ai_score")
    if judged and (row.get("ai_label") in ("ai", "mixed") or (score is not None and score >= threshold)):
        reasons.append("ai")
    if (row.get("similarity_score") or 0) >= FLAG_SIMILARITY_SCORE:
        reasons.append("similarity")
    if row.get("cohort_match_count"):
        reasons.append("cohort")
    return reasons


def emit_run_events(summary: RunSummary, limit: int = MAX_FLAG_EVENTS) -> dict[str, int]:
    """Emit the run's flagged-document events and its run event; never raises (an event
    that cannot be sent is logged: the run's results are already written)."""
    emit_table_assets(summary)  # the tables the run wrote, as assets (docs/events.md)
    try:
        return _emit(summary, limit)
    except Exception as exc:  # noqa: BLE001 - events are a convenience, never a reason to fail a run
        log.warning("Prefect events for run %s not emitted: %s", summary.run_id, type(exc).__name__)
        return {"flag_events": 0, "flagged": 0}


def _emit(summary: RunSummary, limit: int) -> dict[str, int]:
    campaign, run_id = summary.campaign, str(summary.run_id)
    related = [
        {"prefect.resource.id": f"doccheck.campaign.{campaign}", "prefect.resource.role": "campaign",
         "prefect.resource.name": campaign},
        {"prefect.resource.id": f"doccheck.run.{run_id}", "prefect.resource.role": "doccheck-run"},
    ]  # fmt: skip
    rows, total = flagged_documents(summary.report_dir, limit) if summary.report_dir else ([], 0)
    threshold = _threshold(summary.report_dir) if rows and summary.report_dir else AiRules().threshold
    for row in rows:
        document_id = str(row["document_id"])
        emit_event(
            FLAGGED,
            resource={"prefect.resource.id": f"doccheck.document.{campaign}.{document_id}",
                      "doccheck.campaign": campaign, "doccheck.document_id": document_id, "doccheck.run_id": run_id},
            related=related,
            payload={"campaign": campaign, "document_id": document_id, "run_id": run_id, "reasons": _reasons(row, threshold)},
            id=uuid.uuid5(_NAMESPACE, f"{run_id}\x00{document_id}"),
        )  # fmt: skip
    completed = summary.status == "finished"
    emit_event(
        RUN_COMPLETED if completed else RUN_INCOMPLETE,
        resource={"prefect.resource.id": f"doccheck.run.{run_id}", "doccheck.campaign": campaign,
                  "doccheck.status": summary.status},
        related=related[:1],
        payload={"campaign": campaign, "run_id": run_id, "status": summary.status, "documents": summary.documents,
                 "rejected": summary.rejected, "pending": summary.pending, "flagged": total,
                 "flag_events": len(rows), "flag_events_limit": limit},
    )  # fmt: skip
    return {"flag_events": len(rows), "flagged": total}
