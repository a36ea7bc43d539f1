"""Library-level orchestration, no Prefect: submit batches, collect results, build reports.

The Prefect tasks in ``tasks/`` wrap these functions one-to-one; every function takes a
batch (or a run) so 10,000 documents are a few dozen task runs, not 10,000.

Typical use from a notebook::

    ledger = Ledger("sqlite:///doccheck.db")
    run_id = ledger.start_run(campaign=plan.campaign, manifest=str(plan.manifest))
    ledger.record_rejections(run_id, plan.rejections)
    async with AsyncDocCheckClient() as client:
        await submit_batch(client, ledger, run_id, plan.documents)
        await wait_for_results(client, ledger, run_id)
    tables = report_tables(ledger, run_id)
"""

from __future__ import annotations

from doccheck.pipeline.batch_result import BatchResult, RowFailure
from doccheck.pipeline.budget import Budget
from doccheck.pipeline.collect import (
    PendingProduct,
    PollResult,
    WaitResult,
    apply_events,
    poll_pending,
    report_tables,
    wait_for_results,
)
from doccheck.pipeline.failures import FatalSubmitError
from doccheck.pipeline.progress import Progress, ProgressCallback
from doccheck.pipeline.submit import DEFAULT_UPLOAD_CONCURRENCY, submit_batch
from doccheck.pipeline.submit_options import SubmitOptions

__all__ = [
    "DEFAULT_UPLOAD_CONCURRENCY",
    "BatchResult",
    "Budget",
    "FatalSubmitError",
    "PendingProduct",
    "PollResult",
    "Progress",
    "ProgressCallback",
    "RowFailure",
    "SubmitOptions",
    "WaitResult",
    "apply_events",
    "poll_pending",
    "report_tables",
    "submit_batch",
    "wait_for_results",
]
