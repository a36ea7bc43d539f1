"""Library-level orchestration, no Prefect: plan, send, collect; this module is the pipeline's public surface.

The pipeline's three jobs are its three subpackages: :mod:`~doccheck.pipeline.planning` (the
manifest read, each document's mode, key and cost), :mod:`~doccheck.pipeline.sending` (each
document sent at most once, within budget) and :mod:`~doccheck.pipeline.collecting` (results
settled, runs collected). What a run is (the options), the one run sequence (``run_checks``), its
summary and the seam that opens a run's ledger and client (``open_service``) are the shared
modules at the top. Every module is private; callers import from here (a module's own unit
tests excepted).

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

from doccheck.errors import FatalSubmitError, ShardConfigError
from doccheck.pipeline._batch_result import BatchResult, RowFailure
from doccheck.pipeline._entry_point import prefect_integration
from doccheck.pipeline._options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_SUBMIT_DEADLINE_SECONDS,
    DEFAULTS,
    ConnectionOptions,
    OutputOptions,
    RunOptions,
    SourceOptions,
    SubmissionOptions,
    WaitingOptions,
    as_list,
    option_error,
)
from doccheck.pipeline._orchestrate import (
    LocalSteps,
    Prepared,
    RunObserver,
    Steps,
    export_work_dir,
    prepare_run,
    run_checks,
)
from doccheck.pipeline._overlap import OverlappingLocalSteps, record_and_submit
from doccheck.pipeline._progress import Progress, ProgressCallback
from doccheck.pipeline._session import close_ledgers, ledger_for, open_service, service_client
from doccheck.pipeline._summary import RunSummary
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
from doccheck.pipeline.planning._batches import BatchRef, RecordedPlan, load_batch, read_batch, record_plan
from doccheck.pipeline.planning._dry_run import DryRunSummary, dry_run
from doccheck.pipeline.planning._plan import Plan, PlannedDocument, load_plan, run_defaults
from doccheck.pipeline.planning._plan_stream import PlanTally, iter_planned
from doccheck.pipeline.planning._shard_plan import iter_shard
from doccheck.pipeline.planning._shards import check_shared_ledger, in_shard, validate_shard
from doccheck.pipeline.sending._budget import Budget
from doccheck.pipeline.sending._pacing import ChunkPacer, PacedTransport
from doccheck.pipeline.sending._reconcile import reference_for
from doccheck.pipeline.sending._retry_budget import TASK_RETRIES, TASK_RETRY_DELAYS, retry_budget
from doccheck.pipeline.sending._submit_options import DEFAULT_SUBMIT, DEFAULT_UPLOAD_CONCURRENCY, SubmitOptions
from doccheck.pipeline.sending._submit_ref import submit_ref
from doccheck.pipeline.sending._submit_stream import submit_stream
from doccheck.pipeline.sending._submitter import submit_batch

__all__ = [
    "LocalSteps",
    "Steps",
    "BatchRef",
    "BatchResult",
    "Budget",
    "ChunkPacer",
    "ConnectionOptions",
    "DEFAULTS",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_SUBMIT",
    "DEFAULT_SUBMIT_DEADLINE_SECONDS",
    "DEFAULT_UPLOAD_CONCURRENCY",
    "DryRunSummary",
    "FatalSubmitError",
    "OutputOptions",
    "OverlappingLocalSteps",
    "PacedTransport",
    "PendingProduct",
    "Plan",
    "PlanTally",
    "PlannedDocument",
    "PollResult",
    "Prepared",
    "Progress",
    "ProgressCallback",
    "RecordedPlan",
    "RowFailure",
    "RunObserver",
    "RunOptions",
    "RunSummary",
    "ShardConfigError",
    "SourceOptions",
    "SubmissionOptions",
    "SubmitOptions",
    "TASK_RETRIES",
    "TASK_RETRY_DELAYS",
    "WaitResult",
    "WaitingOptions",
    "apply_events",
    "as_list",
    "check_shared_ledger",
    "close_ledgers",
    "collect_runs",
    "collected_summary",
    "describe_poll_errors",
    "dry_run",
    "export_work_dir",
    "in_shard",
    "iter_planned",
    "iter_shard",
    "ledger_for",
    "load_batch",
    "load_plan",
    "open_service",
    "option_error",
    "poll_pending",
    "prefect_integration",
    "prepare_run",
    "read_batch",
    "record_and_submit",
    "record_plan",
    "reference_for",
    "report_tables",
    "retry_budget",
    "run_checks",
    "run_defaults",
    "runs_to_collect",
    "service_client",
    "submit_batch",
    "submit_ref",
    "submit_stream",
    "validate_shard",
    "verify_access",
    "wait_for_results",
]
