"""What one ``submit_batch`` call did: the counts a flow adds up, and each refused row.

Why apart from :mod:`doccheck.pipeline.sending._submitter`: the result is read by the flows, the summary
and the notebook; the submitter that fills it is a long story of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BatchResult", "RowFailure"]


@dataclass(frozen=True)
class RowFailure:
    """One document the service (or the local pre-check) refused, with the reason."""

    document_id: str
    idempotency_key: str
    code: str
    message: str


@dataclass
class BatchResult:
    """What one ``submit_batch`` call did.

    ``submitted``: new checks created now; ``replayed``: the service returned an earlier
    check for the key (resume after a crash: no charge); ``already_done``: the ledger
    already held the check, no request at all; ``failed`` and ``skipped_budget`` are
    rows left without a check (reported, retried by a rerun).
    """

    total: int = 0
    submitted: int = 0
    replayed: int = 0
    already_done: int = 0
    failed: int = 0
    skipped_budget: int = 0
    cost_cents: int = 0
    failures: list[RowFailure] = field(default_factory=list)
    #: Not sent before the submit deadline after transient errors (state ``retry_later``).
    retry_later: int = 0
    #: Held by another live process until the deadline (that process sends them).
    in_flight_elsewhere: int = 0
    #: Checks found with ``GET /checks`` for requests in doubt (also counted in ``replayed``).
    reconciled: int = 0
    #: Keys whose earlier request may have made a check that no lookup could find or rule
    #: out: not sent again (``in_doubt``; ``doccheck resolve`` settles them).
    in_doubt: int = 0
    #: Requeued attempts after a transient error (a measure of the service's weather).
    requeued: int = 0

    @property
    def incomplete(self) -> int:
        """Documents this call left without a check that a later run (or ``resolve``) must settle."""
        return self.retry_later + self.in_flight_elsewhere + self.in_doubt

    def merge(self, other: BatchResult) -> BatchResult:
        """Sum of two results (the flow adds up its batches)."""
        return BatchResult(
            total=self.total + other.total,
            submitted=self.submitted + other.submitted,
            replayed=self.replayed + other.replayed,
            already_done=self.already_done + other.already_done,
            failed=self.failed + other.failed,
            skipped_budget=self.skipped_budget + other.skipped_budget,
            cost_cents=self.cost_cents + other.cost_cents,
            failures=[*self.failures, *other.failures],
            retry_later=self.retry_later + other.retry_later,
            in_flight_elsewhere=self.in_flight_elsewhere + other.in_flight_elsewhere,
            reconciled=self.reconciled + other.reconciled,
            in_doubt=self.in_doubt + other.in_doubt,
            requeued=self.requeued + other.requeued,
        )
