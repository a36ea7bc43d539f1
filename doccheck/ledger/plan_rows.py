"""A recorded plan's rows in the ledger: written one batch per transaction, read back one batch
at a time (:mod:`doccheck.pipeline.batches` streams the manifest; this is its SQL).

Why grouped and ranged: a term's manifest is 100,000 rows; each batch looks up only its own ids
and rows (the documents' (run, row number) index), so a batch costs the same at row 100 and
at row 100,000.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select

from doccheck.ledger._sqltypes import table_of
from doccheck.ledger.in_list import one_of
from doccheck.ledger.tables import DocumentRow, RejectionRow, SubmissionRow
from doccheck.sources.manifest import Rejection

if TYPE_CHECKING:
    from doccheck.ledger import Ledger

__all__ = ["IN_CHUNK", "recorded_rows", "write_plan_group"]

#: Ids per ``IN (...)`` clause (SQLite's variable limit is far above; PostgreSQL has none to speak of).
IN_CHUNK = 500


def write_plan_group(ledger: Ledger, run_id: str, documents: list[dict[str, Any]], rejections: list[Rejection]) -> None:
    """One transaction for a batch's documents and rejections; rows already there are skipped.

    Idempotent like ``record_documents``/``record_rejections`` (same identities), but each
    group looks up only its own ids, so a batch costs the same at row 100 and at row 100,000.
    """
    docs_t, rej_t = table_of(DocumentRow), table_of(RejectionRow)
    with ledger.engine.begin() as conn:
        if documents:
            ids = [d["document_id"] for d in documents]
            existing: set[str] = set()
            for i in range(0, len(ids), IN_CHUNK):
                existing.update(
                    conn.execute(
                        select(docs_t.c.document_id).where(
                            docs_t.c.run_id == run_id, one_of(docs_t.c.document_id, ids[i : i + IN_CHUNK], conn)
                        )
                    ).scalars()
                )
            fresh = [d for d in documents if d["document_id"] not in existing]
            if fresh:
                conn.execute(insert(docs_t), fresh)
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
