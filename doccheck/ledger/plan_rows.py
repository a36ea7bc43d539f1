"""A recorded plan's rows in the ledger: written one batch per transaction, read back one batch
at a time (:mod:`doccheck.pipeline.planning._batches` streams the manifest; this is its SQL).

Why grouped and ranged: a term's manifest is 100,000 rows; each batch looks up only its own ids
and rows (the documents' (run, row number) index), so a batch costs the same at row 100 and
at row 100,000.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select

from doccheck.ledger._sqltypes import table_of
from doccheck.ledger.bulk_sql import insert_absent
from doccheck.ledger.tables import DocumentRow, RejectionRow, SubmissionRow
from doccheck.sources.manifest import Rejection

if TYPE_CHECKING:
    from doccheck.ledger import Ledger

__all__ = ["recorded_rows", "write_plan_group"]


def write_plan_group(ledger: Ledger, run_id: str, documents: list[dict[str, Any]], rejections: list[Rejection]) -> None:
    """One transaction for a batch's documents and rejections; rows already there are skipped.

    Idempotent like ``record_documents``/``record_rejections`` (same identities): a document
    already recorded for the run is skipped by the unique (run, document) constraint, so a batch
    costs the same at row 100 and at row 100,000.
    """
    docs_t, rej_t = table_of(DocumentRow), table_of(RejectionRow)
    with ledger.engine.begin() as conn:
        # the documents already there (same run and id: a batch recorded again) skipped in the
        # insert itself: one statement, not a look-up then an insert (issue 28: on PostgreSQL the
        # look-up and the multi-row insert were ~11 ms a batch, 11 s of a term's rerun)
        insert_absent(conn, docs_t, ("run_id", "document_id"), documents)
        if rejections:
            low, high = rejections[0].row_number, rejections[-1].row_number
            seen = {
                tuple(r)
                for r in conn.execute(
                    select(rej_t.c.row_number, rej_t.c.document_id, rej_t.c.code).where(
                        rej_t.c.run_id == run_id, rej_t.c.row_number >= low, rej_t.c.row_number <= high
                    )
                )
            }
            rows = []
            for r in rejections:
                if (r.row_number, r.document_id, r.code) in seen:
                    continue
                seen.add((r.row_number, r.document_id, r.code))
                rows.append(
                    {
                        "run_id": run_id,
                        "row_number": r.row_number,
                        "document_id": r.document_id,
                        "field": r.field,
                        "code": r.code,
                        "reason": r.reason,
                    }
                )
            if rows:
                conn.execute(insert(rej_t), rows)


def recorded_rows(ledger: Ledger, run_id: str, first_row: int, last_row: int) -> dict[int, dict[str, Any]]:
    """The ledger's documents of ``run_id`` in rows ``first_row``..``last_row``, by row number, each with its
    key's submission state (``state``, None when the key was never submitted): one query."""
    t, sub = table_of(DocumentRow), table_of(SubmissionRow)
    with ledger.engine.connect() as conn:
        rows = conn.execute(
            select(
                t.c.row_number,
                t.c.document_id,
                t.c.idempotency_key,
                t.c.products,
                t.c.mode,
                t.c.content_hash,
                sub.c.state,
            )  # fmt: skip
            .select_from(t.outerjoin(sub, sub.c.idempotency_key == t.c.idempotency_key))
            .where(t.c.run_id == run_id, t.c.row_number >= first_row, t.c.row_number <= last_row)
            .order_by(t.c.row_number)
        ).mappings()
        return {int(r["row_number"]): dict(r) for r in rows}
