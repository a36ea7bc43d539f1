"""The run's steps as Prefect tasks, and what the flow's watchers see, for ``run_checks``.

Why here: ``doccheck.pipeline.run_checks`` is the one sequence of a run (the
notebook runs it with direct library calls). The flow hands it :class:`TaskSteps`, whose
every step is a task run (names, retries on transient errors), and a :class:`FlowObserver`
that logs and keeps the progress artifact current. Recording and sending overlap in ONE task
run (:meth:`TaskSteps.record_and_submit`); the sequential steps (``prepare``, one ``submit`` a
batch) serve sharded runs and ``submission.overlap=False``.

Tasks receive the service URL, the ledger URL and where the key lives (a block or a
block's name), never the key itself.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from contextlib import AbstractAsyncContextManager
from typing import Any

from doccheck.ledger import Ledger
from doccheck.outputs import RULE_OPTIONS
from doccheck.pipeline import (
    BatchResult,
    Prepared,
    RunObserver,
    RunOptions,
    RunSummary,
    SubmitOptions,
    WaitingOptions,
    WaitResult,
    ledger_for,
)
from doccheck.storage import display
from prefect_doccheck.tasks import _progress_hub as progress
from prefect_doccheck.tasks._artifacts import artifact_key, track_progress
from prefect_doccheck.tasks._instructor import instructor_report
from prefect_doccheck.tasks._matching import publish_cohort
from prefect_doccheck.tasks._pipeline import (
    apply_webhook_events,
    record_and_submit_task,
    record_plan_task,
    submit_batch_ref,
    wait_results,
    write_run_reports,
)
from prefect_doccheck.tasks._service_access import KeySource

__all__ = ["FlowObserver", "TaskSteps", "log_plan"]


def log_plan(logger: Any, campaign: str, documents: int, counts_by_mode: dict[str, int], words: int,
             cost_cents: int, rejections: list[str]) -> None:  # fmt: skip
    """The plan's line (``plan for <campaign>: ...``) and one line per rejected row."""
    counts = ", ".join(f"{k} {v}" for k, v in counts_by_mode.items())
    logger.info("plan for %s: %d documents (%s), %d words, estimated %d cents", campaign, documents, counts, words,
                cost_cents)  # fmt: skip
    for reason in rejections:
        logger.info("rejected: %s", reason)


class TaskSteps:
    """:class:`~doccheck.pipeline._orchestrate.Steps` as Prefect task runs."""

    def __init__(self, *, base_url: str, database_url: str, key_source: KeySource, logger: Any = None) -> None:
        self.logger = logger or logging.getLogger("doccheck.flows")
        self.base_url = base_url
        self.database_url = database_url
        self.key_source = key_source

    @property
    def ledger(self) -> Ledger:
        ledger: Ledger = ledger_for(self.database_url)
        return ledger

    def _params(self, options: RunOptions) -> dict[str, Any]:
        """What the run records about itself (never a secret): the one shape of ``RunOptions.recorded``."""
        return options.recorded("flow", base_url=self.base_url)

    async def prepare(self, options: RunOptions) -> Prepared:
        progress.reset("submit")
        prepared: Prepared = record_plan_task(self.database_url, options, self._params(options), str(uuid.uuid4()))
        await self._recorded(prepared)
        return prepared

    async def _recorded(self, prepared: Prepared) -> None:
        self.logger.info("run %s recorded in the ledger", prepared.run_id)
        await publish_cohort(prepared.cohort, prepared.campaign)

    async def record_and_submit(self, options: RunOptions, observer: RunObserver) -> tuple[Prepared, BatchResult]:
        """Record and send in ONE task run (``record and submit <manifest>``), the phases overlapped.

        The task tells this loop once the recording is complete (requests may still be in flight):
        the run's line, the cohort and the observer's ``prepared`` (plan line, progress artifact)
        are then done here, in the flow's context, while the task goes on sending. Until then the
        progress bar counts the documents admitted so far; from then on, the run's documents.
        """
        loop = asyncio.get_running_loop()
        recorded: asyncio.Future[Prepared] = loop.create_future()

        def settle(prepared: Prepared) -> None:
            if not recorded.done():
                recorded.set_result(prepared)

        def announce(prepared: Prepared) -> None:  # wherever the task runs: delivered on this loop
            loop.call_soon_threadsafe(settle, prepared)

        progress.reset("submit")
        work = asyncio.ensure_future(record_and_submit_task(
            self.database_url, options, self._params(options), str(uuid.uuid4()), base_url=self.base_url,
            api_key_block=self.key_source, announce=announce,
        ))  # fmt: skip
        try:
            await asyncio.wait({work, recorded}, return_when=asyncio.FIRST_COMPLETED)
            if recorded.done():
                await self._recorded(recorded.result())
                await observer.prepared(recorded.result())
            result: tuple[Prepared, BatchResult] = await work
        except BaseException:
            if not work.done():  # the flow's side failed (an artifact refused, a stop signal): stop sending too
                work.cancel()
                await asyncio.wait({work})
                if not work.cancelled():
                    work.exception()  # retrieved: the flow's own error is the one raised
            raise
        if not recorded.done():  # told after the last request (cannot happen today; kept exact)
            await self._recorded(result[0])
            await observer.prepared(result[0])
        return result

    async def submit(self, batch: Any, *, prepared: Prepared, number: int, count: int,
                     send: SubmitOptions) -> BatchResult:  # fmt: skip
        result: BatchResult = await submit_batch_ref(
            batch, recorded=prepared.recorded, batch_count=count, base_url=self.base_url,
            database_url=self.database_url, api_key_block=self.key_source, send=send,
        )  # fmt: skip
        return result

    async def submit_shards(self, prepared: Prepared, options: RunOptions) -> BatchResult:
        """Fan the submission out to ``bulk-check-shard`` flow runs (``flows.fan_out``)."""
        from prefect_doccheck.flows import submit_sharded

        source = options.source
        result: BatchResult = await submit_sharded(
            run_id=prepared.run_id, manifest=prepared.manifest, campaign=prepared.campaign,
            products=source.products, metadata_columns=source.metadata_columns, key_source=self.key_source,
            base_url=self.base_url, database_url=options.connection.database_url, submission=options.submission,
        )  # fmt: skip
        return result

    async def wait(self, run_id: str, waiting: WaitingOptions) -> WaitResult:
        progress.reset("wait")
        result: WaitResult = await wait_results(
            run_id, base_url=self.base_url, database_url=self.database_url, api_key_block=self.key_source,
            timeout=waiting.timeout, grace_seconds=waiting.grace_seconds, poll_interval=waiting.poll_interval,
        )  # fmt: skip
        return result

    async def apply_events(self) -> int:
        applied: int = apply_webhook_events(self.database_url)
        return applied

    async def write_outputs(self, summary: RunSummary, options: RunOptions) -> RunSummary:
        assert summary.run_id is not None
        from doccheck.outputs import run_label

        label = run_label(summary.campaign, summary.run_id)
        # staged: the folder and latest/ are published by the instructor report, once complete
        paths = write_run_reports(self.database_url, summary.run_id, options.output.out_dir, label, staged=True)
        summary.report_dir, summary.latest_dir = display(paths.run_dir), display(paths.latest_dir)
        outputs = await instructor_report(
            summary.report_dir, summary.latest_dir, campaign=summary.campaign, run_id=summary.run_id,
            database_url=self.database_url, base_url=self.base_url, api_key_block=self.key_source,
            download=list(options.output.download), status=summary.status,
            rules=options.output.model_dump(include=set(RULE_OPTIONS)),
        )  # fmt: skip
        summary.report_html, summary.downloads = outputs["report_html"], outputs["downloads"]
        return summary


class FlowObserver(RunObserver):
    """Log lines and the progress artifact of a flow run (and the CLI's progress bar)."""

    def __init__(self, logger: Any, stack: Any, *, wait: bool) -> None:
        self._logger = logger
        self._stack = stack
        self._wait = wait
        self._watch: Any = None
        self._run_id = ""

    async def prepared(self, prepared: Prepared) -> None:
        """Reset the progress bar and open the progress artifact (kept open on the flow's stack)."""
        self._run_id = prepared.run_id
        plan = prepared.plan
        log_plan(self._logger, prepared.campaign, prepared.documents, plan.counts_by_mode(), plan.total_words(),
                 plan.estimated_cost_cents(), [r.reason for r in plan.rejections])  # fmt: skip
        progress.set_total("submit", prepared.documents)  # the parts (batches, or the overlapped run) kept
        manager: AbstractAsyncContextManager[Any] = track_progress(
            artifact_key(prepared.campaign, "progress"), prepared.documents, prepared.products, wait=self._wait
        )
        self._watch = await self._stack.enter_async_context(manager)

    async def batches_done(self, total: BatchResult) -> None:
        if self._watch is not None:
            await self._watch.push()

    def submitted(self, total: BatchResult) -> None:
        if self._watch is not None:
            self._watch.mark_submitted()
        self._logger.info(
            "submitted: %d new, %d replayed, %d already in the ledger, %d failed, %d left unsent (budget)",
            total.submitted, total.replayed, total.already_done, total.failed, total.skipped_budget,
        )  # fmt: skip
        if total.incomplete:
            self._logger.warning(
                "%d documents not sent before the submit deadline (%d after transient errors, %d in flight "
                "in another run); run the same command again to continue",
                total.incomplete, total.retry_later, total.in_flight_elsewhere,
            )  # fmt: skip

    def waited(self, waited: WaitResult | None) -> None:
        if waited is None:
            return
        if self._watch is not None:
            self._watch.mark_results(waited.completed + waited.failed)
        if waited.timed_out:
            self._logger.warning(
                "%d products still pending at the wait timeout; run `doccheck collect --run-id %s` later",
                len(waited.pending),
                self._run_id,
            )
