"""How a batch is sent: the one object every submit path takes.

Why one object: ``submit_batch``, ``submit_stream``, ``submit_ref``, the flow's batch task
and the shard's each used to take the run's sending options one keyword at a time, so a new
option was re-listed in every signature and every call. Here it is declared once, with its
default; :meth:`SubmitOptions.for_run` derives it from the run's
:class:`~doccheck.pipeline._options.SubmissionOptions` (the budget, the deadline) in one place.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from doccheck.ledger import DEFAULT_LEASE_SECONDS
from doccheck.pipeline._options import DEFAULT_CONCURRENCY, DEFAULT_SUBMIT_DEADLINE_SECONDS, SubmissionOptions
from doccheck.pipeline._progress import ProgressCallback
from doccheck.pipeline.sending._budget import Budget

__all__ = ["DEFAULT_SUBMIT", "DEFAULT_UPLOAD_CONCURRENCY", "SubmitOptions"]

#: Upload-mode documents in flight at once. Each holds one of the account's 50 waiting-upload slots
#: between POST /uploads and POST /checks; far below 50: room for other runs and leaked uploads.
DEFAULT_UPLOAD_CONCURRENCY = 4


@dataclass(frozen=True)
class SubmitOptions:
    """What a submit path needs to send documents (no secrets, no client, no ledger).

    ``budget`` is shared by every batch of a run (one cap); ``deadline_at`` is epoch seconds
    (``None``: now + ``DEFAULT_SUBMIT_DEADLINE_SECONDS`` when the batch starts); ``on_progress``
    is set by whoever reports progress (a task builds its own: a callback is no task parameter).
    """

    concurrency: int = DEFAULT_CONCURRENCY
    upload_concurrency: int = DEFAULT_UPLOAD_CONCURRENCY
    webhook_url: str | None = None
    budget: Budget | None = None
    on_progress: ProgressCallback | None = None
    deadline_at: float | None = None
    lease_seconds: float = DEFAULT_LEASE_SECONDS

    @classmethod
    def for_run(cls, submission: SubmissionOptions) -> SubmitOptions:
        """A run's sending options: its concurrency, webhook, one budget and one deadline from now."""
        budget = Budget(submission.max_spend_cents) if submission.max_spend_cents is not None else None
        return cls(
            concurrency=submission.concurrency,
            webhook_url=submission.webhook_url,
            budget=budget,
            deadline_at=time.time() + submission.submit_deadline,
        )

    def deadline(self) -> float:
        """The deadline in epoch seconds (the default one counted from now)."""
        return self.deadline_at if self.deadline_at is not None else time.time() + DEFAULT_SUBMIT_DEADLINE_SECONDS

    def but(self, **changes: object) -> SubmitOptions:
        """A copy with ``changes`` (e.g. a batch's share of the concurrency, its progress callback)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


#: Every default (a submit path's default argument).
DEFAULT_SUBMIT = SubmitOptions()
