"""The ``bulk_check`` flow: manifest → plan → ledger → batched submission → results → Parquet.

Orchestration only: every step that talks to the service or writes the Parquet reports is
a task over ``doccheck`` (see ``prefect_doccheck.tasks.pipeline``); closing the run in the
ledger and building the summary (``_finish``) run in the flow itself, outside a task.
Documents go in batches (``batch_size``, default 100) so 10,000 documents are ~100 task
runs, and a few batches (``parallel_batches``) run at a time so the UI shows steady
progress while the client's own concurrency and the 50 waiting-upload slots stay bounded.

The API key is never a parameter: ``credentials`` is a ``DocCheckCredentials`` block (or
its name), ``api_key_block`` the name of a Secret block, and without either the key comes
from ``DOCCHECK_API_KEY`` (``prefect_doccheck.tasks.credentials``). The key itself never
reaches the Prefect API, a log, an artifact or a report.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, tags
from prefect.artifacts import acreate_markdown_artifact

from doccheck import reports
from doccheck.downloads import parse_kinds
from doccheck.pipeline import BatchResult, Budget, WaitResult
from doccheck.pipeline.shards import check_shared_ledger
from doccheck.pipeline.submit import DEFAULT_SUBMIT_DEADLINE_SECONDS
from doccheck.planning import Plan
from prefect_doccheck.credentials import DocCheckCredentials
from prefect_doccheck.flows.fan_out import submit_sharded
from prefect_doccheck.flows.summary import RunSummary, money_fields
from prefect_doccheck.tasks import progress
from prefect_doccheck.tasks.artifacts import artifact_key, publish_run_artifacts, track_progress
from prefect_doccheck.tasks.credentials import (
    base_url_of,
    resolve_api_key,
    resolve_base_url,
    resolve_credentials,
    resolve_database_url,
)
from prefect_doccheck.tasks.instructor import instructor_report, publish_report_link
from prefect_doccheck.tasks.matching import match_and_report
from prefect_doccheck.tasks.pipeline import (
    apply_webhook_events,
    check_service,
    plan_manifest,
    record_run,
    submit_documents,
    wait_results,
    write_run_reports,
)

DEFAULT_BATCH_SIZE = 100
DEFAULT_PARALLEL_BATCHES = 2


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    """Accept ``["ai", "similarity"]`` as well as ``"ai,similarity"`` (CLI, UI forms)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,;|]", value) if v.strip()]
    return [str(v).strip() for v in value if str(v).strip()]


def campaign_name(manifest: str, campaign: str | None) -> str:
    """The run's campaign: the given one, else the manifest's file name without extension."""
    return (campaign or "").strip() or Path(manifest).stem


def run_label(campaign: str, run_id: str, now: datetime | None = None) -> str:
    """Folder name of a run's reports (``doccheck.reports.run_label``)."""
    return reports.run_label(campaign, run_id, now)


def batches(items: Sequence[Any], size: int) -> list[list[Any]]:
    """``items`` cut into lists of at most ``size`` (the last one shorter)."""
    size = max(1, int(size))
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def _flow_run_name() -> str:
    from prefect.runtime import flow_run

    params = flow_run.parameters
    name = f"bulk-check {campaign_name(str(params.get('manifest', '')), params.get('campaign'))}"
    return name + (" (dry run)" if params.get("dry_run") else "")


def products_from_summary(raw: dict[str, int]) -> dict[str, dict[str, int]]:
    """``{"ai_completed": 3, ...}`` (the ledger's counts) → ``{"ai": {"completed": 3}}``."""
    out: dict[str, dict[str, int]] = {}
    for key, count in raw.items():
        product, _, status = key.partition("_")
        out.setdefault(product, {})[status or "unknown"] = count
    return out


def rejection_rows(plan: Plan) -> list[dict[str, str | int | None]]:
    """The rejected rows as plain dicts (row, document_id, field, code, reason)."""
    return [
        {"row": r.row_number, "document_id": r.document_id, "field": r.field, "code": r.code, "reason": r.reason}
        for r in plan.rejections
    ]


def plan_summary(plan: Plan) -> RunSummary:
    """What a dry run reports: counts per mode, words, estimated cost, rejects."""
    return RunSummary(
        status="planned",
        campaign=plan.campaign,
        manifest=str(plan.manifest),
        dry_run=True,
        documents=len(plan.documents),
        rejected=len(plan.rejections),
        counts_by_mode=plan.counts_by_mode(),
        total_words=plan.total_words(),
        estimated_cost_cents=plan.estimated_cost_cents(),
        rejections=rejection_rows(plan),
    )


def _log_plan(logger: Any, plan: Plan) -> None:
    counts = ", ".join(f"{k} {v}" for k, v in plan.counts_by_mode().items())
    logger.info(
        "plan for %s: %d documents (%s), %d words, estimated %d cents",
        plan.campaign,
        len(plan.documents),
        counts,
        plan.total_words(),
        plan.estimated_cost_cents(),
    )
    for rejection in plan.rejections:
        logger.info("rejected: %s", rejection.reason)


@flow(name="bulk-check", flow_run_name=_flow_run_name, validate_parameters=True)
async def bulk_check(
    manifest: str,
    products: list[str] | str = ["ai"],  # noqa: B006 - Prefect shows the default in the UI
    out_dir: str = "reports",
    campaign: str | None = None,
    concurrency: int = 8,
    wait: bool = True,
    wait_timeout: float = 600,
    max_spend_cents: int | None = None,
    metadata_columns: list[str] | str = [],  # noqa: B006
    dry_run: bool = False,
    base_url: str | None = None,
    database_url: str | None = None,
    webhook_url: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    grace_seconds: float = 30,
    poll_interval: float = 2,
    parallel_batches: int = DEFAULT_PARALLEL_BATCHES,
    api_key_block: str | None = None,
    download: list[str] | str = [],  # noqa: B006
    credentials: DocCheckCredentials | str | None = None,
    submit_deadline: float = DEFAULT_SUBMIT_DEADLINE_SECONDS,
    templates: list[str] | str = [],  # noqa: B006 - files every student was given (cohort matching ignores them)
    shards: int = 1,
) -> RunSummary:
    """Check every document of ``manifest`` and write the Parquet reports under ``out_dir``.

    ``dry_run`` validates and plans only (nothing is sent, nothing recorded).
    ``max_spend_cents`` stops submitting before the budget would be exceeded; what is
    left is reported as ``skipped_budget``. With ``wait=False`` the flow returns once
    everything is submitted; ``collect_results`` finishes the job later.
    ``download`` (``similarity_pdf``, ``pdf``, ``original``) fetches those files of the
    finished checks into ``<run folder>/files/``; ``report.html`` links them.
    ``submit_deadline``: seconds during which documents that met 429/5xx/network errors
    are requeued; what is still unsent then is ``retry_later`` and the run ``incomplete``.
    ``shards`` > 1: the documents are submitted by that many runs of the ``bulk-check-shard``
    deployment on its work pool (``prefect_doccheck.flows.fan_out``; PostgreSQL ledger).
    """
    started = time.monotonic()
    logger = get_run_logger()
    product_list = _as_list(products) or ["ai"]
    parse_kinds(_as_list(download))  # a typo in the file kinds fails before anything is sent
    plan: Plan = plan_manifest(manifest, campaign, product_list, _as_list(metadata_columns))
    _log_plan(logger, plan)
    if dry_run:
        summary = plan_summary(plan)
        summary.cohort_matches = await match_and_report(
            plan, database_url=resolve_database_url(database_url), templates=_as_list(templates)
        )
        await acreate_markdown_artifact(markdown=summary.as_markdown(), description="bulk-check plan (dry run)")
        return summary

    # Fail fast on configuration before anything is recorded or sent.
    key_source = await resolve_credentials(credentials, api_key_block)
    base = resolve_base_url(base_url or base_url_of(key_source))
    resolve_api_key(key_source)
    db_url = resolve_database_url(database_url)
    check_shared_ledger(db_url, shards)  # shards > 1 on SQLite: the fix, before anything is recorded
    await check_service(base, key_source)

    async with AsyncExitStack() as stack:
        stack.enter_context(tags(f"campaign:{plan.campaign}"))
        params = {
            "manifest": str(plan.manifest),
            "products": product_list,
            "concurrency": concurrency,
            "max_spend_cents": max_spend_cents,
            "metadata_columns": _as_list(metadata_columns),
            "batch_size": batch_size,
            "base_url": base,
        }
        run_id: str = record_run(db_url, plan, params)
        logger.info("run %s recorded in the ledger", run_id)
        cohort = await match_and_report(plan, run_id=run_id, database_url=db_url, templates=_as_list(templates))

        budget = Budget(max_spend_cents) if max_spend_cents is not None else None
        deadline_at = time.time() + submit_deadline
        groups = batches(plan.documents, batch_size) if shards <= 1 else []  # shards > 1: sent below
        per_batch = max(1, concurrency // max(1, min(parallel_batches, len(groups) or 1)))
        progress.reset("submit", len(plan.documents))
        product_count = sum(len(doc.products) for doc in plan.documents)
        watch = await stack.enter_async_context(
            track_progress(artifact_key(plan.campaign, "progress"), len(plan.documents), product_count, wait=wait)
        )
        total = BatchResult()
        window = max(1, parallel_batches)
        for start in range(0, len(groups), window):
            chunk = groups[start : start + window]
            results = await asyncio.gather(
                *(
                    submit_documents(
                        batch,
                        run_id=run_id,
                        batch_number=start + i + 1,
                        batch_count=len(groups),
                        base_url=base,
                        database_url=db_url,
                        api_key_block=key_source,
                        concurrency=per_batch,
                        webhook_url=webhook_url,
                        budget=budget,
                        deadline_at=deadline_at,
                    )
                    for i, batch in enumerate(chunk)
                ),
                return_exceptions=True,
            )
            for result in results:
                if isinstance(result, BaseException):
                    raise result
                total = total.merge(result)
            await watch.push()
        if shards > 1:
            total = await submit_sharded(
                run_id=run_id, shards=shards, manifest=str(plan.manifest), campaign=plan.campaign,
                products=product_list, metadata_columns=_as_list(metadata_columns), key_source=key_source,
                base_url=base, database_url=database_url, batch_size=batch_size, concurrency=concurrency,
                webhook_url=webhook_url, submit_deadline=submit_deadline, max_spend_cents=max_spend_cents,
            )  # fmt: skip
        watch.mark_submitted()
        logger.info(
            "submitted: %d new, %d replayed, %d already in the ledger, %d failed, %d left unsent (budget)",
            total.submitted,
            total.replayed,
            total.already_done,
            total.failed,
            total.skipped_budget,
        )
        if total.incomplete:
            logger.warning(
                "%d documents not sent before the submit deadline (%d after transient errors, %d in flight "
                "in another run); run the same command again to continue",
                total.incomplete,
                total.retry_later,
                total.in_flight_elsewhere,
            )

        waited: WaitResult | None = None
        if wait:
            progress.reset("wait")
            waited = await wait_results(
                run_id,
                base_url=base,
                database_url=db_url,
                api_key_block=key_source,
                timeout=wait_timeout,
                grace_seconds=grace_seconds,
                poll_interval=poll_interval,
            )
            watch.mark_results(waited.completed + waited.failed)
            if waited.timed_out:
                logger.warning(
                    "%d products still pending after %s s; run `doccheck collect --run-id %s` later",
                    len(waited.pending),
                    wait_timeout,
                    run_id,
                )
        else:
            apply_webhook_events(db_url)

        label = run_label(plan.campaign, run_id)
        paths = write_run_reports(db_url, run_id, out_dir, label, plan.metadata_by_document())
        summary = _finish(
            run_id=run_id,
            plan=plan,
            database_url=db_url,
            batch=total,
            waited=waited,
            wait=wait,
            report_dir=str(paths.run_dir),
            latest_dir=str(paths.latest_dir),
            elapsed=time.monotonic() - started,
            cohort=cohort,
        )
        outputs = await instructor_report(
            summary.report_dir, summary.latest_dir, campaign=plan.campaign, run_id=run_id, database_url=db_url,
            base_url=base, api_key_block=key_source, download=_as_list(download), status=summary.status,
        )  # fmt: skip
        summary.report_html, summary.downloads = outputs["report_html"], outputs["downloads"]
        logger.info("summary: %s", summary.model_dump_json(exclude={"rejections"}))
        await publish_run_artifacts(summary.model_dump(mode="json"))
        await publish_report_link(outputs["report_html"], plan.campaign)
        return summary


def _finish(
    *,
    run_id: str,
    plan: Plan,
    database_url: str,
    batch: BatchResult,
    waited: WaitResult | None,
    wait: bool,
    report_dir: str,
    latest_dir: str,
    elapsed: float,
    cohort: dict[str, Any] | None = None,
) -> RunSummary:
    """Close the run in the ledger and build the summary from the ledger's own counts."""
    from prefect_doccheck.tasks.pipeline import ledger_for

    ledger = ledger_for(database_url)
    counts = ledger.run_summary(run_id)
    products = products_from_summary(counts.get("products", {}))
    pending = sum(c.get("pending", 0) for c in products.values())
    status = "finished" if pending == 0 else ("pending" if wait else "submitted")
    if batch.incomplete:
        status = "incomplete"  # documents left unsent: the exit status says so
    summary = RunSummary(
        status=status,
        campaign=plan.campaign,
        manifest=str(plan.manifest),
        run_id=run_id,
        documents=len(plan.documents),
        rejected=len(plan.rejections),
        counts_by_mode=plan.counts_by_mode(),
        total_words=plan.total_words(),
        estimated_cost_cents=plan.estimated_cost_cents(),
        submitted=batch.submitted,
        reused=batch.replayed + batch.already_done,
        submit_failed=counts.get("submissions", {}).get(
            "failed", 0
        ),  # the ledger's: errors recovered since don't count
        unsent_budget=batch.skipped_budget,
        unsent_retry_later=batch.retry_later,
        in_flight_elsewhere=batch.in_flight_elsewhere,
        products=products,
        pending=pending,
        spent_cents=batch.cost_cents,
        **money_fields(counts),
        report_dir=report_dir,
        latest_dir=latest_dir,
        elapsed_seconds=round(elapsed, 3),
        rejections=rejection_rows(plan),
        cohort_matches=cohort or {},
    )
    ledger.finish_run(run_id, status=status, summary=summary.model_dump(mode="json"))
    return summary
