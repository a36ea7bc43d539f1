"""Review dispositions: what a reviewer decided about a flagged document, kept across reruns.

Why in the ledger: published guidance on AI and similarity indicators says the same thing
everywhere: look at the work, talk to the student, record what was decided. A decision that
lives only in someone's spreadsheet is lost at the next run, and a flag that was looked at and
cleared is raised again next week. So ``doccheck review`` records one decision per document
of a campaign (``cleared``, ``discussed`` or ``referred``, a note, who and when), and the
report shows it on every later run.

A decision belongs to the version of the document that was looked at (its content hash and
idempotency key): on a run whose document has the same content, the decision is ``current``
and a cleared flag is not raised again; when the student handed in a changed document, the
decision is shown as about an earlier version and the flag stands.

Functions taking the session first; the facade's ``set_disposition``, ``has_dispositions`` and
``dispositions_of_run`` open the transaction. Purge
removes the rows with the rest of a campaign's or a run's data (:mod:`~doccheck.ledger._data_purge`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from doccheck.errors import DispositionError
from doccheck.ledger._in_list import one_of
from doccheck.ledger._tables import DispositionRow, DocumentRow, utcnow

__all__ = ["STATUSES", "Disposition", "dispositions_of_run", "has_dispositions", "set_disposition"]

#: The decisions a reviewer can record.
STATUSES = ("cleared", "discussed", "referred")


@dataclass(frozen=True)
class Disposition:
    """One recorded decision, as a report shows it; ``current``: about this version of the document."""

    document_id: str
    status: str
    note: str | None
    decided_by: str | None
    decided_at: datetime
    current: bool = True


def set_disposition(
    session: Session,
    campaign: str,
    document_id: str,
    status: str,
    *,
    note: str | None = None,
    decided_by: str | None = None,
) -> Disposition:
    """Record ``status`` for the document's latest version in the campaign (replacing an earlier
    decision; one per document of a campaign, the last one counts)."""
    if status not in STATUSES:
        raise DispositionError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    doc = session.exec(
        select(DocumentRow)
        .where(DocumentRow.campaign == campaign, DocumentRow.document_id == document_id)
        .order_by(col(DocumentRow.id).desc())
    ).first()
    if doc is None:
        raise DispositionError(f"campaign {campaign!r} has no document {document_id!r}")
    row = session.exec(
        select(DispositionRow).where(DispositionRow.campaign == campaign, DispositionRow.document_id == document_id)
    ).first() or DispositionRow(campaign=campaign, document_id=document_id, status=status)
    row.status, row.note, row.decided_by, row.decided_at = status, note, decided_by, utcnow()
    row.idempotency_key, row.content_hash = doc.idempotency_key, doc.content_hash
    session.add(row)
    return Disposition(document_id, status, note, decided_by, row.decided_at)


def has_dispositions(session: Session, run_id: str) -> bool:
    """Whether the run's campaign has any decision at all: most have none, and then a
    writer need not ask for each chunk of documents (100 look-ups of a 100,000-document run)."""
    campaign = select(DocumentRow.campaign).where(DocumentRow.run_id == run_id).limit(1).scalar_subquery()
    found = session.exec(select(DispositionRow.id).where(DispositionRow.campaign == campaign).limit(1)).first()
    return found is not None


def dispositions_of_run(
    session: Session, run_id: str, document_ids: Sequence[str] | None = None
) -> dict[str, Disposition]:
    """document_id → the decision about it (of the run's campaign), ``current`` when it was
    about the content this run checked (only of ``document_ids`` when given)."""
    stmt = (
        select(DocumentRow, DispositionRow)
        .join(
            DispositionRow,
            (col(DispositionRow.campaign) == col(DocumentRow.campaign))
            & (col(DispositionRow.document_id) == col(DocumentRow.document_id)),
        )
        .where(DocumentRow.run_id == run_id)
    )
    if document_ids is not None:
        if not document_ids:
            return {}
        stmt = stmt.where(one_of(col(DocumentRow.document_id), document_ids, session))
    return {doc.document_id: _disposition(doc, row) for doc, row in session.exec(stmt).all()}


def _disposition(doc: DocumentRow, row: DispositionRow) -> Disposition:
    if doc.content_hash is not None and row.content_hash is not None:
        current = doc.content_hash == row.content_hash
    else:
        current = doc.idempotency_key == row.idempotency_key
    return Disposition(row.document_id, row.status, row.note, row.decided_by, row.decided_at, current)
