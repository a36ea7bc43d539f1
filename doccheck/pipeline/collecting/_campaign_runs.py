"""Which runs of a campaign still wait for results (``collect_results`` by campaign).

Why by campaign and not by the latest run: a schedule or an event trigger names the
campaign, and products of EARLIER runs (a timeout, ``--no-wait``, dropped deliveries)
would otherwise stay ``processing`` forever. Collecting a campaign polls every pending
check of it and rewrites the reports of every run whose documents they belong to.
"""

from __future__ import annotations

from sqlalchemy import or_
from sqlmodel import col, select

from doccheck.domain import ProductState, SubmissionState
from doccheck.ledger import DocumentRow, Ledger, OutcomeRow, RunRow, SubmissionRow


def runs_with_pending(ledger: Ledger, campaign: str) -> list[str]:
    """Ids of the campaign's runs with a product not final yet (fetched), oldest first."""
    with ledger.session() as s:
        stmt = (
            select(RunRow.id, RunRow.started_at)
            .join(DocumentRow, col(DocumentRow.run_id) == RunRow.id)
            .join(SubmissionRow, col(SubmissionRow.idempotency_key) == DocumentRow.idempotency_key)
            .join(OutcomeRow, col(OutcomeRow.check_id) == SubmissionRow.check_id)
            .where(
                RunRow.campaign == campaign,
                SubmissionRow.state == SubmissionState.SUBMITTED,
                or_(col(OutcomeRow.status) == ProductState.PROCESSING, col(OutcomeRow.fetched) == False),  # noqa: E712
            )
            .distinct()
            .order_by(col(RunRow.started_at))
        )
        return [run_id for run_id, _ in s.exec(stmt).all()]
