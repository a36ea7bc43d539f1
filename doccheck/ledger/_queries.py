"""Read-side queries: what is still pending, counts per status, reports and summaries.

Functions taking the session first (:class:`~doccheck.ledger._facade.Ledger` opens it).
Nothing here writes; the report rows and a run's summary are built in
:mod:`doccheck.ledger._report_rows` from the ledger alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import func, or_
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from doccheck.domain import ProductState, SubmissionState
from doccheck.ledger._merge import TERMINAL
from doccheck.ledger._tables import DocumentRow, OutcomeRow, SubmissionRow


@dataclass(frozen=True)
class PendingCheck:
    """A submitted check that still has a product without a final, fetched result.

    ``awaiting_fetch``: an event said a product finished but its results (scores,
    sources) are not in the ledger yet, so the check should be fetched now.
    ``silent_products``: products still processing with no event since the last poll (poll
    after a grace). A processing product an event told about since the last poll (an event
    naming a product this side does not know, :mod:`doccheck.ledger._webhook_events`) is awaiting fetch.
    """

    check_id: str
    campaign: str
    submitted_at: datetime | None
    last_polled_at: datetime | None
    last_event_at: datetime | None
    awaiting_fetch: bool
    silent_products: tuple[str, ...]


def _scoped_submissions(run_id: str | None, campaign: str | None) -> SelectOfScalar[SubmissionRow]:
    stmt = select(SubmissionRow).where(SubmissionRow.state == SubmissionState.SUBMITTED)
    if run_id is not None:
        keys = select(DocumentRow.idempotency_key).where(DocumentRow.run_id == run_id)
        stmt = stmt.where(col(SubmissionRow.idempotency_key).in_(keys))
    if campaign is not None:
        stmt = stmt.where(SubmissionRow.campaign == campaign)
    return stmt


def pending_outcomes(session: Session, *, run_id: str | None = None, campaign: str | None = None) -> list[OutcomeRow]:
    """Outcomes without a final, fetched result (processing, or finished per an event
    but not fetched yet), for the submitted checks of a run or a campaign."""
    subs = _scoped_submissions(run_id, campaign).subquery()
    stmt = (
        select(OutcomeRow)
        .join(subs, subs.c.check_id == OutcomeRow.check_id)
        .where(or_(col(OutcomeRow.status) == ProductState.PROCESSING, col(OutcomeRow.fetched) == False))  # noqa: E712
        .order_by(col(OutcomeRow.id))
    )
    return list(session.exec(stmt).all())


def outcome_counts(session: Session, *, run_id: str | None = None, campaign: str | None = None) -> dict[str, int]:
    """``{"total", "completed", "failed", "pending"}`` over the products of the submitted
    checks of a run or campaign, in one aggregate query (cheap enough for every poll
    round of a 10,000-document run). ``completed`` and ``failed`` count only fetched results."""
    subs = _scoped_submissions(run_id, campaign).subquery()
    stmt = (
        select(OutcomeRow.status, OutcomeRow.fetched, func.count())
        .join(subs, subs.c.check_id == OutcomeRow.check_id)
        .group_by(col(OutcomeRow.status), col(OutcomeRow.fetched))
    )
    counts = {"total": 0, "completed": 0, "failed": 0, "pending": 0}
    for status, fetched, n in session.exec(stmt).all():
        counts["total"] += n
        if status == ProductState.FAILED and fetched:  # not fetched: a contradiction to settle
            counts["failed"] += n
        elif status == ProductState.COMPLETED and fetched:
            counts["completed"] += n
        else:
            counts["pending"] += n
    return counts


def pending_checks(session: Session, *, run_id: str | None = None, campaign: str | None = None) -> list[PendingCheck]:
    """Pending outcomes grouped by check, with what polling needs to decide."""
    subs = _scoped_submissions(run_id, campaign).subquery()
    stmt = (
        select(  # type: ignore[call-overload]  # seven columns: more than sqlmodel's stubs type
            OutcomeRow.check_id,
            OutcomeRow.product,
            OutcomeRow.status,
            OutcomeRow.event_at,
            subs.c.campaign,
            subs.c.submitted_at,
            subs.c.last_polled_at,
        )
        .join(subs, subs.c.check_id == OutcomeRow.check_id)
        .where(or_(col(OutcomeRow.status) == ProductState.PROCESSING, col(OutcomeRow.fetched) == False))  # noqa: E712
        .order_by(col(OutcomeRow.id))
    )
    grouped: dict[str, _Pending] = {}
    for check_id, product, status, event_at, camp, submitted_at, polled in session.exec(stmt).all():
        g = grouped.setdefault(check_id, _Pending(camp, submitted_at, polled))
        if event_at is not None and (g.last_event_at is None or event_at > g.last_event_at):
            g.last_event_at = event_at
        if status in TERMINAL or _told_since_polled(event_at, polled):
            g.awaiting_fetch = True  # an event said it finished, or named no product we know
        else:
            g.silent.append(product)
    return [
        PendingCheck(
            check_id=cid,
            campaign=g.campaign,
            submitted_at=g.submitted_at,
            last_polled_at=g.last_polled_at,
            last_event_at=g.last_event_at,
            awaiting_fetch=g.awaiting_fetch,
            silent_products=tuple(g.silent),
        )
        for cid, g in grouped.items()
    ]


@dataclass
class _Pending:
    """A check's pending products while :func:`pending_checks` groups them."""

    campaign: str
    submitted_at: datetime | None
    last_polled_at: datetime | None
    last_event_at: datetime | None = None
    awaiting_fetch: bool = False
    silent: list[str] = field(default_factory=list)


# -- the reference campaign of the expected false flags (issue 25) ----------------


def ai_scores(session: Session, campaign: str, *, min_words: int = 0) -> list[float]:
    """The completed AI scores of a campaign's submitted checks, one per check, of texts of
    at least ``min_words`` words (an unknown length counts): the known-human reference of
    :func:`doccheck.outputs._calibration.calibrate`, judged by the same length gate."""
    stmt = (
        select(OutcomeRow.check_id, OutcomeRow.score)
        .join(SubmissionRow, col(SubmissionRow.check_id) == col(OutcomeRow.check_id))
        .where(SubmissionRow.campaign == campaign, OutcomeRow.product == "ai")
        .where(OutcomeRow.status == ProductState.COMPLETED, col(OutcomeRow.score).is_not(None))
        .where(or_(col(SubmissionRow.words).is_(None), col(SubmissionRow.words) >= min_words))
    )
    by_check = {check_id: float(score) for check_id, score in session.exec(stmt).all() if score is not None}
    return list(by_check.values())


def _told_since_polled(event_at: datetime | None, polled: datetime | None) -> bool:
    """An event arrived after the check's last poll (SQLite hands naive UTC datetimes back)."""
    if event_at is None:
        return False
    if polled is None:
        return True
    return _aware(event_at) > _aware(polled)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
