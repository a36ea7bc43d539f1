"""The Prefect tasks (``prefect_doccheck.tasks`` once installed): thin wrappers over library calls.

They add what Prefect gives (retries, tags, concurrency, artifacts, events) and no logic: what a task
does is a function of :mod:`doccheck` that the notebook calls directly.

Callers (the flows, the integration module, tests of a flow) import from here; the modules are
private, one per job: the run's tasks (``_pipeline``), the steps the run sequence calls as tasks
(``_steps``), the shard's paced submit (``_shard_submit``, ``_rate_limit``), where the key comes from
(``_service_access``), the storage options of a flow run (``_storage_block``), what the UI shows (``_artifacts``, ``_assets``, ``_run_events``, ``_run_tags``,
``_instructor``, ``_matching``), which failures are retried (``_retry_condition``) and the run's
process-wide progress (``_progress_hub``: :func:`listening`). This ``__init__`` imports none of them
until a name is used, so a flow loads what it runs and no import goes in a circle (the steps start
the shards' flow runs, whose flow imports tasks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from prefect_doccheck.tasks._artifacts import artifact_key, publish_run_artifacts
    from prefect_doccheck.tasks._assets import MATERIALIZED, asset_key
    from prefect_doccheck.tasks._instructor import instructor_report, publish_report_link
    from prefect_doccheck.tasks._matching import publish_cohort
    from prefect_doccheck.tasks._pipeline import check_service, open_client, poll_results, write_run_reports
    from prefect_doccheck.tasks._progress_hub import listening
    from prefect_doccheck.tasks._rate_limit import (
        FleetRateLimit,
        ensure_rate_limit,
        fleet_pacer,
        rate_limit_from_env,
    )
    from prefect_doccheck.tasks._run_events import FLAGGED, RUN_INCOMPLETE, emit_run_events
    from prefect_doccheck.tasks._run_tags import tag_flow_run
    from prefect_doccheck.tasks._service_access import (
        base_url_of,
        load_secret_block,
        resolve_api_key,
        resolve_base_url,
        resolve_credentials,
        resolve_database_url,
    )
    from prefect_doccheck.tasks._shard_submit import submit_shard_batch
    from prefect_doccheck.tasks._steps import FlowObserver, TaskSteps, log_plan
    from prefect_doccheck.tasks._storage_block import load_storage_block, storage_block, under_storage_block

__all__ = [
    "FLAGGED",
    "FleetRateLimit",
    "FlowObserver",
    "MATERIALIZED",
    "RUN_INCOMPLETE",
    "TaskSteps",
    "artifact_key",
    "asset_key",
    "base_url_of",
    "check_service",
    "emit_run_events",
    "ensure_rate_limit",
    "fleet_pacer",
    "instructor_report",
    "listening",
    "load_secret_block",
    "load_storage_block",
    "log_plan",
    "open_client",
    "poll_results",
    "publish_cohort",
    "publish_report_link",
    "publish_run_artifacts",
    "rate_limit_from_env",
    "resolve_api_key",
    "resolve_base_url",
    "resolve_credentials",
    "resolve_database_url",
    "storage_block",
    "submit_shard_batch",
    "tag_flow_run",
    "under_storage_block",
    "write_run_reports",
]

#: Name → the private module that defines it, imported by ``__getattr__`` on first use.
_LAZY = {
    "artifact_key": "_artifacts",
    "publish_run_artifacts": "_artifacts",
    "MATERIALIZED": "_assets",
    "asset_key": "_assets",
    "instructor_report": "_instructor",
    "publish_report_link": "_instructor",
    "publish_cohort": "_matching",
    "check_service": "_pipeline",
    "open_client": "_pipeline",
    "poll_results": "_pipeline",
    "write_run_reports": "_pipeline",
    "listening": "_progress_hub",
    "FleetRateLimit": "_rate_limit",
    "ensure_rate_limit": "_rate_limit",
    "fleet_pacer": "_rate_limit",
    "rate_limit_from_env": "_rate_limit",
    "FLAGGED": "_run_events",
    "RUN_INCOMPLETE": "_run_events",
    "emit_run_events": "_run_events",
    "tag_flow_run": "_run_tags",
    "base_url_of": "_service_access",
    "load_secret_block": "_service_access",
    "resolve_api_key": "_service_access",
    "resolve_base_url": "_service_access",
    "resolve_credentials": "_service_access",
    "resolve_database_url": "_service_access",
    "submit_shard_batch": "_shard_submit",
    "FlowObserver": "_steps",
    "TaskSteps": "_steps",
    "log_plan": "_steps",
    "load_storage_block": "_storage_block",
    "storage_block": "_storage_block",
    "under_storage_block": "_storage_block",
}


__getattr__ = _lazy_getattr(__name__, _LAZY)
