"""Sending a run: each planned document sent at most once per Idempotency-Key, within budget.

:func:`submit_batch` (one batch) and :func:`submit_stream` (batches as they are recorded) take
one :class:`SubmitOptions`; a request in doubt is reconciled before any resend; the budget caps
what a run (and its campaign) may spend; requests are paced by a rate limit shared with other
processes (:class:`PacedTransport`); :func:`retry_budget` adds up how long a document is retried.
"""

from __future__ import annotations

from doccheck.pipeline.sending._budget import Budget
from doccheck.pipeline.sending._pacing import ChunkPacer, PacedTransport
from doccheck.pipeline.sending._reconcile import reference_for
from doccheck.pipeline.sending._retry_budget import TASK_RETRIES, TASK_RETRY_DELAYS, retry_budget
from doccheck.pipeline.sending._submit_options import DEFAULT_SUBMIT, DEFAULT_UPLOAD_CONCURRENCY, SubmitOptions
from doccheck.pipeline.sending._submit_ref import submit_ref
from doccheck.pipeline.sending._submit_stream import submit_stream
from doccheck.pipeline.sending._submitter import submit_batch

__all__ = [
    "Budget",
    "ChunkPacer",
    "DEFAULT_SUBMIT",
    "DEFAULT_UPLOAD_CONCURRENCY",
    "PacedTransport",
    "SubmitOptions",
    "TASK_RETRIES",
    "TASK_RETRY_DELAYS",
    "reference_for",
    "retry_budget",
    "submit_batch",
    "submit_ref",
    "submit_stream",
]
