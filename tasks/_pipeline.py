"""Prefect tasks: thin wrappers that give the library's pipeline steps retries, names and tags.

Why thin: the logic lives in ``doccheck.pipeline`` (usable from a notebook without
Prefect). A task only adds what orchestration needs:

- **retries for transient failures only** (``prefect_doccheck.tasks._retry_condition``): repeating a batch is safe
  because every submission has a deterministic Idempotency-Key and the ledger skips what
  is already submitted; a 401 or a bad manifest is never retried; ``record and submit`` is
  never retried at all (see :func:`record_and_submit_task`);
- **meaningful names** in the UI (``submit batch 3/20``, ``wait for results``);
- **no caching** (``cache_policy=NONE``): inputs are batch references and URLs whose hash
  means nothing, and a cached "success" would hide new work;
- **references, not documents**: a submit task gets a ``BatchRef`` (rows, byte offset) and
  re-reads its rows, the overlapped ``record and submit`` task the run's options, so no student
  text is ever a parameter, a result or a state;
- **no secrets in parameters**: tasks receive the service URL and the *name* of where the
  key lives; the key itself is resolved inside the task (``prefect_doccheck.tasks._service_access``).

Each task opens its own client (an HTTP connection pool cannot travel between tasks);
the ledger is shared per database URL within the process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from prefect import task
from prefect.cache_policies import NONE

from doccheck.client import AsyncDocCheckClient
from doccheck.outputs import ReportPaths, write_reports
from doccheck.pipeline import (
    DEFAULT_SUBMIT,
    TASK_RETRIES,
    BatchRef,
    BatchResult,
    PollResult,
    Prepared,
    RecordedPlan,
    RunObserver,
    RunOptions,
    SubmitOptions,
    WaitResult,
    apply_events,
    ledger_for,
    poll_pending,
    prepare_run,
    record_and_submit,
    report_tables,
    service_client,
    submit_ref,
    verify_access,
    wait_for_results,
)
from prefect_doccheck.credentials import DocCheckCredentials
from prefect_doccheck.tasks import _progress_hub as progress
from prefect_doccheck.tasks._retry_condition import RETRY_DELAYS, retry_on_transient
from prefect_doccheck.tasks._service_access import KeySource, resolve_api_key


def open_client(
    base_url: str,
    api_key_block: KeySource = None,
    *,
    concurrency: int = 0,
    transport: httpx.AsyncBaseTransport | None = None,
    upload_transport: httpx.AsyncBaseTransport | None = None,
) -> AsyncDocCheckClient:
    """An async client for ``base_url`` with the key from ``resolve_api_key`` (and the
    timeouts of a ``DocCheckCredentials`` block when that is where the key lives), with a
    connection for each of ``concurrency`` requests (``lanes_for``); ``transport`` and
    ``upload_transport`` as ``AsyncDocCheckClient`` takes them."""
    if isinstance(api_key_block, DocCheckCredentials):
        key, timeout = api_key_block.api_key, api_key_block.httpx_timeout()
    else:
        key, timeout = resolve_api_key(api_key_block), None
    return service_client(base_url, key, concurrency=concurrency, timeout=timeout, transport=transport,
                          upload_transport=upload_transport)  # fmt: skip


#: Task options for steps that only read/write the ledger or call the service: retried a
#: couple of times on transient errors (network, 5xx, 429, a locked database), never on
#: errors that a retry cannot fix. No caching: inputs are live state, not pure values.
TRANSIENT_RETRIES: dict[str, Any] = {
    "cache_policy": NONE,
    "retries": TASK_RETRIES,
    "retry_delay_seconds": RETRY_DELAYS,
    "retry_condition_fn": retry_on_transient,
}


@task(name="check service", task_run_name="check service", cache_policy=NONE)
async def check_service(base_url: str, api_key_block: KeySource = None) -> None:
    """One free authenticated request (``GET /webhook``, see ``waiting.verify_access``)
    before anything is recorded.

    Why: an unreachable service or a wrong key would otherwise fail every document one by
    one (after the client's retries) and end as a "finished" run full of row errors; the
    user needs one clear error instead. ``GET /checks`` is not used: the interface does not
    show a list, and a run must not need one. No task retries: the client already retried.
    """
    async with open_client(base_url, api_key_block) as client:
        await verify_access(client)


@task(
    name="record plan",
    task_run_name="record {options.source.manifest}",
    **TRANSIENT_RETRIES,
)
def record_plan_task(database_url: str, options: RunOptions, params: dict[str, Any], run_id: str) -> Prepared:
    """Validate, plan, record and cohort-match the manifest in one streamed read
    (``orchestrate.prepare_run``).

    ``run_id`` is chosen by the caller, so a retry records into the same run (rows already
    recorded are skipped) instead of starting a second one. Returns counts, the cohort's
    summary and batch refs, never a text."""
    return prepare_run(ledger_for(database_url), options, params=params, run_id=run_id)


class _Recorded(RunObserver):
    """Hands the recorded run to ``announce`` (the flow's side hears of it on its own loop)."""

    def __init__(self, announce: Callable[[Prepared], None] | None) -> None:
        self._announce = announce

    async def prepared(self, prepared: Prepared) -> None:
        if self._announce is not None:
            self._announce(prepared)


@task(
    name="record and submit",
    task_run_name="record and submit {options.source.manifest}",
    cache_policy=NONE,
    retries=0,  # never a second recording: see the docstring
)
async def record_and_submit_task(
    database_url: str,
    options: RunOptions,
    params: dict[str, Any],
    run_id: str,
    *,
    base_url: str,
    api_key_block: KeySource = None,
    announce: Callable[[Prepared], None] | None = None,
) -> tuple[Prepared, BatchResult]:
    """Record and cohort-match the manifest while its recorded batches are sent
    (``doccheck.pipeline.record_and_submit``, issue 26): one task run for the two phases.

    ``run_id`` is chosen by the caller; ``announce(prepared)`` is called once the recording is
    complete (requests may still be in flight), so that the flow logs the plan and publishes the
    cohort and the progress artifact in its own context. Inputs are references and options,
    the result counts and refs: no text reaches a parameter, a result or a state.

    No task retries: a ledger blip is retried by the library call itself
    (``doccheck.ledger._transient``), a 429/5xx/network error requeues the document until the
    submit deadline, and what still fails (a database down for longer, a 401) fails the flow run
    with the run recorded so far; the same command run again records the rest and sends only
    what the ledger does not show submitted (one check, one charge a document).
    """
    ledger = ledger_for(database_url)
    async with open_client(base_url, api_key_block, concurrency=options.submission.concurrency) as client:
        return await record_and_submit(
            ledger, client, options, params=params, run_id=run_id, observer=_Recorded(announce),
            on_progress=progress.callback_for("submit", "run"),
        )  # fmt: skip


@task(
    name="submit batch",
    task_run_name="submit batch {ref.number}/{batch_count}",
    **TRANSIENT_RETRIES,
)
async def submit_batch_ref(
    ref: BatchRef,
    *,
    recorded: RecordedPlan,
    batch_count: int,
    base_url: str,
    database_url: str,
    api_key_block: KeySource = None,
    send: SubmitOptions = DEFAULT_SUBMIT,
) -> BatchResult:
    """Re-read one batch of the recorded manifest and submit it (``batches.submit_ref``) with
    ``send`` (its progress callback is this task's).

    The task's input is a reference (rows, byte offset), not documents: no text reaches a
    parameter, a result or a state. Rows changed since planning are refused, not sent."""
    ledger = ledger_for(database_url)
    async with open_client(base_url, api_key_block, concurrency=send.concurrency) as client:
        return await submit_ref(
            client, ledger, recorded.run_id, recorded.manifest, ref, campaign=recorded.campaign,
            products=recorded.default_products, metadata_columns=recorded.metadata_columns,
            options=send.but(on_progress=progress.callback_for("submit", f"batch-{ref.number}")),
        )  # fmt: skip


@task(
    name="wait for results",
    task_run_name="wait for results",
    **TRANSIENT_RETRIES,
)
async def wait_results(
    run_id: str,
    *,
    base_url: str,
    database_url: str,
    api_key_block: KeySource = None,
    timeout: float = 600,
    grace_seconds: float = 30,
    poll_interval: float = 2,
) -> WaitResult:
    """Wait until every product of the run is final (events first, polling after the grace)."""
    ledger = ledger_for(database_url)
    async with open_client(base_url, api_key_block) as client:
        return await wait_for_results(
            client,
            ledger,
            run_id,
            timeout=timeout,
            grace_seconds=grace_seconds,
            poll_interval=poll_interval,
            on_progress=progress.callback_for("wait", "run"),
        )


@task(
    name="poll pending",
    task_run_name="poll pending checks",
    **TRANSIENT_RETRIES,
)
async def poll_results(
    run_id: str | None,
    *,
    base_url: str,
    database_url: str,
    api_key_block: KeySource = None,
    campaign: str | None = None,
) -> PollResult:
    """Apply stored webhook events, then GET every check of the run (or, with
    ``campaign``, of every run of the campaign) that is not final."""
    ledger = ledger_for(database_url)
    apply_events(ledger)
    async with open_client(base_url, api_key_block) as client:
        return await poll_pending(client, ledger, run_id=run_id, campaign=campaign, older_than_seconds=0)


@task(
    name="apply events",
    task_run_name="apply webhook events",
    **TRANSIENT_RETRIES,
)
def apply_webhook_events(database_url: str) -> int:
    """Apply the webhook events the receiver stored (``wait=False`` runs still do this)."""
    return apply_events(ledger_for(database_url))


@task(
    name="write reports",
    task_run_name="write reports",
    **TRANSIENT_RETRIES,
)
def write_run_reports(
    database_url: str,
    run_id: str,
    out_dir: str,
    run_label: str,
    metadata: dict[str, dict[str, str]] | None = None,
    staged: bool = False,
    latest: bool = True,
) -> ReportPaths:
    """Build the run's tables from the ledger and write the Parquet reports (+ ``latest/``).
    ``staged``: in the run's ``.partial`` folder, published by ``instructor report``;
    ``latest=False``: ``latest/`` left alone (an earlier run's reports rewritten by collect)."""
    ledger = ledger_for(database_url)
    tables = report_tables(ledger, run_id)
    found = metadata if metadata is not None else ledger.document_metadata(run_id)  # read as the reports go
    return write_reports(out_dir, run_label, tables, metadata=found or None, staged=staged, latest=latest)
