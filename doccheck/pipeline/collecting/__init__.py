"""Collecting results: webhook events applied, silent products polled, runs collected into reports.

:func:`apply_events` and :func:`poll_pending` settle each product's result from the service's
answer; :func:`wait_for_results` waits (polling as a fallback, sooner without a webhook);
:func:`collect_runs` collects a run, or every run of a campaign with pending products.
"""

from __future__ import annotations

from doccheck.pipeline.collecting._collect_run import collect_runs, collected_summary, runs_to_collect
from doccheck.pipeline.collecting._results import (
    PendingProduct,
    PollResult,
    WaitResult,
    apply_events,
    describe_poll_errors,
    poll_pending,
    report_tables,
    wait_for_results,
)
from doccheck.pipeline.collecting._waiting import verify_access

__all__ = [
    "PendingProduct",
    "PollResult",
    "WaitResult",
    "apply_events",
    "collect_runs",
    "collected_summary",
    "describe_poll_errors",
    "poll_pending",
    "report_tables",
    "runs_to_collect",
    "verify_access",
    "wait_for_results",
]
