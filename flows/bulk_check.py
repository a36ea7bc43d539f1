"""The ``bulk_check`` flow: manifest → plan → ledger → batched submission → results → Parquet.

The run's sequence is ``doccheck.pipeline.run_checks``, the same one ``doccheck
run`` without a server and the notebook run; here each step is a Prefect task
(``prefect_doccheck.tasks._steps``), so the UI shows ``record and submit <manifest>`` (the
manifest recorded and cohort-matched while its recorded batches are sent: the phases overlap,
issue 26), ``wait for results`` and ``write reports`` as task runs, and the flow adds artifacts
and log lines. Closing the run in the ledger (the summary from the ledger's own counts) happens
in the flow, outside a task.

The parameters are the groups of ``doccheck.pipeline._options`` (source, submission, waiting,
output, connection): one form section each in the UI, with the defaults and bounds
declared once. Documents are recorded in batches (``submission.batch_size``, default 100).
With ``submission.shards`` > 1 or ``submission.overlap=False`` the phases run one after the
other: ``record <manifest>``, then one ``submit batch 3/20`` task run per batch,
``submission.parallel_batches`` at a time.

The API key is never a parameter: ``credentials`` is a ``DocCheckCredentials`` block (or
its name), ``api_key_block`` the name of a Secret block, and without either the key comes
from ``DOCCHECK_API_KEY`` (``prefect_doccheck.tasks._service_access``). The key itself never
reaches the Prefect API, a log, an artifact or a report.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_markdown_artifact
from prefect.cache_policies import NONE

from doccheck.pipeline import (
    ConnectionOptions,
    OutputOptions,
    RunOptions,
    RunSummary,
    SourceOptions,
    SubmissionOptions,
    WaitingOptions,
    check_shared_ledger,
    run_checks,
)
from doccheck.pipeline import dry_run as plan_only
from prefect_doccheck.credentials import DocCheckCredentials
from prefect_doccheck.tasks import (
    FlowObserver,
    TaskSteps,
    base_url_of,
    check_service,
    emit_run_events,
    log_plan,
    publish_cohort,
    publish_report_link,
    publish_run_artifacts,
    resolve_api_key,
    resolve_base_url,
    resolve_credentials,
    resolve_database_url,
    tag_flow_run,
    under_storage_block,
)


def _flow_run_name() -> str:
    from prefect.runtime import flow_run

    params = flow_run.parameters
    source = params.get("source") or {}
    if isinstance(source, SourceOptions):
        name = source.campaign_name
    else:
        name = SourceOptions(manifest=str(source.get("manifest") or "-"), campaign=source.get("campaign")).campaign_name
    return f"bulk-check {name}" + (" (dry run)" if params.get("dry_run") else "")


def _task(fn: Any, name: str) -> Any:
    from prefect import task

    return task(name=name, task_run_name=name, cache_policy=NONE)(fn)


# The DocCheckStorage block named by DOCCHECK_STORAGE_BLOCK holds the storage options for the whole run
# (tasks/_storage_block.py; the decorator is Any to mypy, as every name of prefect_doccheck.tasks).
@flow(name="bulk-check", flow_run_name=_flow_run_name, validate_parameters=True)
@under_storage_block  # type: ignore[untyped-decorator]
async def bulk_check(
    source: SourceOptions,
    submission: SubmissionOptions = SubmissionOptions(),  # noqa: B008 - frozen models; the UI shows the defaults
    waiting: WaitingOptions = WaitingOptions(),  # noqa: B008
    output: OutputOptions = OutputOptions(),  # noqa: B008
    connection: ConnectionOptions = ConnectionOptions(),  # noqa: B008
    credentials: DocCheckCredentials | str | None = None,
    api_key_block: str | None = None,
    dry_run: bool = False,
) -> RunSummary:
    """Check every document of ``source.manifest`` and write the reports under ``output.out_dir``.

    ``dry_run`` validates and plans only (nothing is sent, nothing recorded).
    ``submission.max_spend_cents`` is the campaign's budget: what would exceed it is left
    unsent (``skipped_budget``). With ``waiting.wait=False`` the flow returns once
    everything is submitted; ``collect_results`` finishes the job later.
    ``output.download`` (``similarity_pdf``, ``pdf``, ``original``) fetches those files of
    the finished checks into ``<run folder>/files/``; ``report.html`` links them.
    ``submission.submit_deadline``: seconds during which documents that met 429/5xx/network
    errors are requeued; what is still unsent then is ``retry_later`` and the run ``incomplete``.
    ``submission.shards`` > 1: the documents are submitted by that many runs of the
    ``bulk-check-shard`` deployment on its work pool (``prefect_doccheck.flows._fan_out``;
    PostgreSQL ledger). ``bulk_check(**RunOptions(...).flow_parameters())`` runs a :class:`RunOptions`.
    """
    options = RunOptions(source=source, submission=submission, waiting=waiting, output=output,
                         connection=connection, dry_run=dry_run)  # fmt: skip
    logger = get_run_logger()
    if dry_run:
        return await _dry_run(options, logger)

    await tag_flow_run(f"campaign:{source.campaign_name}")  # the flow run's, not its task runs' (see run_tags)
    # Fail fast on configuration before anything is recorded or sent.
    key_source = await resolve_credentials(credentials, api_key_block)
    base = resolve_base_url(connection.base_url or base_url_of(key_source))
    resolve_api_key(key_source)
    db_url = resolve_database_url(connection.database_url)
    check_shared_ledger(db_url, submission.shards)  # shards > 1 on SQLite: the fix, before anything is recorded
    await check_service(base, key_source)

    async with AsyncExitStack() as stack:
        steps = TaskSteps(base_url=base, database_url=db_url, key_source=key_source, logger=logger)
        summary = await run_checks(options, steps, FlowObserver(logger, stack, wait=waiting.wait))
        summary.orchestration = "Prefect flow run"
        logger.info("summary: %s", summary.model_dump_json(exclude={"rejections"}))
        await publish_run_artifacts(summary.model_dump(mode="json"))
        emit_run_events(summary)  # doccheck.document.flagged + doccheck.run.completed/incomplete
        if summary.report_html:
            await publish_report_link(summary.report_html, summary.campaign)
        return summary


async def _dry_run(options: RunOptions, logger: Any) -> RunSummary:
    """Validate, plan and cohort-match as a stream (``doccheck.pipeline.planning._dry_run``); nothing recorded."""
    from doccheck.pipeline import export_work_dir
    from doccheck.sources.lms import as_manifest

    source = options.source
    manifest, _ = as_manifest(
        source.manifest, export_work_dir(options), lms=source.lms, attempts=source.attempts, roster=source.roster
    )
    planned = _task(plan_only, "plan manifest (dry run)")(
        manifest, campaign=source.campaign_name, products=source.products, metadata_columns=source.metadata_columns,
        database_url=resolve_database_url(options.connection.database_url), templates=source.templates,
    )  # fmt: skip
    summary = RunSummary(**planned.model_dump())
    log_plan(logger, summary.campaign, summary.documents, summary.counts_by_mode, summary.total_words,
             summary.estimated_cost_cents, [str(r["reason"]) for r in summary.rejections])  # fmt: skip
    if summary.cohort_matches:
        await publish_cohort(summary.cohort_matches, summary.campaign)
    await acreate_markdown_artifact(markdown=summary.as_markdown(), description="bulk-check plan (dry run)")
    return summary
