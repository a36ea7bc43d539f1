"""The one orchestration of a run, shared by the ``bulk_check`` flow and the notebook.

Why one: the notebook used to re-implement the flow's sequence (record, match, submit in
batches, wait, close, report), and the two drifted. Here the sequence is written once;
what differs is *how* each step runs, behind :class:`Steps`:

- the flow's steps are Prefect tasks (retries, names in the UI; ``prefect_doccheck.tasks._steps``);
- the notebook's and ``doccheck run``'s without a server are the library functions called
  directly (``overlap.OverlappingLocalSteps``, :class:`LocalSteps`), so they need no Prefect.

Steps that are :class:`OverlappingSteps` (the flow's, the notebook's and ``doccheck run``'s
without a server) record, match and send in one overlapped step (``doccheck.pipeline._overlap``):
the first batches are sent while later ones are still read. Sharded runs,
``submission.overlap=False`` and the plain :class:`LocalSteps` keep ``prepare`` then one
``submit`` per batch.

What happens to the user is reported to a :class:`RunObserver` (the flow's progress
artifact and log lines, the notebook's live line). The run is closed in the ledger and the
summary built from the ledger's own counts (:func:`close_run`), so what the summary says is
what the ledger holds, however many processes wrote it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from doccheck.ledger import Ledger
from doccheck.pipeline._batch_result import BatchResult
from doccheck.pipeline._gc_freeze import collections_skip_older_objects
from doccheck.pipeline._learnt_types import adopt_for_planning
from doccheck.pipeline._options import RunOptions, WaitingOptions
from doccheck.pipeline._summary import (
    RunSummary,
    money_fields,
    notice_fields,
    products_from_summary,
    with_export_rejections,
)
from doccheck.pipeline.collecting._results import WaitResult
from doccheck.pipeline.planning._batches import BatchRef, PlanRecording, RecordedPlan, start_recording
from doccheck.pipeline.sending._submit_options import SubmitOptions
from doccheck.storage import spooling

__all__ = [
    "LocalSteps",
    "OverlappingSteps",
    "PlanFigures",
    "Prepared",
    "RunObserver",
    "Steps",
    "close_run",
    "prepare_run",
    "prepared_from",
    "summary_rejections",
    "run_checks",
]


class PlanFigures(Protocol):
    """What a summary needs of a plan (``doccheck.pipeline.planning._plan.Plan`` or a streamed tally)."""

    @property
    def campaign(self) -> str: ...
    @property
    def rejections(self) -> Sequence[Any]: ...
    def counts_by_mode(self) -> dict[str, int]: ...
    def total_words(self) -> int: ...
    def estimated_cost_cents(self) -> int: ...


@dataclass
class Prepared:
    """A recorded run before anything is sent: its id, its figures and its batches.

    ``batches`` are what :meth:`Steps.submit` takes, one element per batch task run.
    """

    run_id: str
    manifest: str
    plan: PlanFigures
    documents: int
    products: int
    batches: list[Any]
    cohort: dict[str, Any] = field(default_factory=dict)
    #: The streamed record of the run (its batches are ``BatchRef``s re-read one at a time).
    recorded: RecordedPlan | None = None

    @property
    def campaign(self) -> str:
        return self.plan.campaign


class Steps(Protocol):
    """How each step of a run is carried out (Prefect tasks, or direct library calls)."""

    @property
    def ledger(self) -> Ledger:
        """The ledger the run is recorded in (read by :func:`close_run`)."""
        ...

    async def prepare(self, options: RunOptions) -> Prepared:
        """Plan the manifest, record the run and its documents, match the cohort."""
        ...

    async def submit(
        self,
        batch: Any,
        *,
        prepared: Prepared,
        number: int,
        count: int,
        send: SubmitOptions,
    ) -> BatchResult:
        """Submit one batch with ``send`` (the batch's share of the concurrency, the run's one
        budget and deadline); row-level refusals are data in the result, not exceptions."""
        ...

    async def submit_shards(self, prepared: Prepared, options: RunOptions) -> BatchResult:
        """Have ``submission.shards`` workers submit the run's documents (a work pool)."""
        ...

    async def wait(self, run_id: str, waiting: WaitingOptions) -> WaitResult:
        """Wait until every product of the run is final or the timeout passes."""
        ...

    async def apply_events(self) -> int:
        """Apply stored webhook events (a run that does not wait still does this)."""
        ...

    async def write_outputs(self, summary: RunSummary, options: RunOptions) -> RunSummary:
        """Write the run's reports (Parquet, report.html, downloads) and fill their paths in."""
        ...


@runtime_checkable
class OverlappingSteps(Protocol):
    """Steps that send the recorded batches while later ones are still read, recorded and
    matched (``doccheck.pipeline._overlap``); ``run_checks`` then calls this instead of
    ``prepare`` followed by one ``submit`` per batch (unless sharded or ``submission.overlap``
    is false). ``OverlappingLocalSteps`` and the flow's ``TaskSteps`` (one task run) are such steps."""

    async def record_and_submit(self, options: RunOptions, observer: RunObserver) -> tuple[Prepared, BatchResult]:
        """Record and match the run while submitting it; the recorded run and the submission's result."""
        ...


class RunObserver:
    """Hooks for what a watcher sees; every method does nothing by default."""

    async def prepared(self, prepared: Prepared) -> None:
        """The run is recorded; ``prepared.documents`` will be submitted."""

    async def batches_done(self, total: BatchResult) -> None:
        """A window of batches finished; ``total`` is the run's sum so far."""

    def submitted(self, total: BatchResult) -> None:
        """Every batch is done."""

    def waiting(self) -> None:
        """Waiting for results starts."""

    def waited(self, waited: WaitResult | None) -> None:
        """Waiting ended (None: the run did not wait)."""


async def run_checks(options: RunOptions, steps: Steps, observer: RunObserver | None = None) -> RunSummary:
    """Record, submit, wait and report one run; returns the summary the ledger backs.

    Configuration is the caller's to check first (service reachable, key present): this
    records a run, so it should only start when the run can go somewhere.
    """
    observer = observer or RunObserver()
    started = time.monotonic()
    # One process records and sends: what planning reads of a store's files is kept for the
    # sending (doccheck.storage.spooling: one GET a document, not two). Shards send elsewhere.
    with spooling() if options.submission.shards <= 1 else contextlib.nullcontext():
        prepared, total = await _record_and_send(options, steps, observer)
    observer.submitted(total)

    waited: WaitResult | None = None
    if options.waiting.wait and prepared.documents:
        observer.waiting()
        waited = await steps.wait(prepared.run_id, options.waiting)
    else:
        await steps.apply_events()
    observer.waited(waited)

    # The reports allocate a row a document beside everything the run left alive: full passes of
    # the garbage collector skip the older objects, as while submitting (~25 % of the reports' time).
    with collections_skip_older_objects():
        summary = close_run(
            steps.ledger, prepared, batch=total, waited=waited, wait=options.waiting.wait, started=started
        )
        summary = await steps.write_outputs(summary, options)
    if summary.report_dir:  # stored again so that purge finds the folders it must remove
        steps.ledger.finish_run(prepared.run_id, status=summary.status, summary=summary.model_dump(mode="json"))
    return summary


async def _record_and_send(options: RunOptions, steps: Steps, observer: RunObserver) -> tuple[Prepared, BatchResult]:
    """The run recorded and its documents sent: overlapped where the steps can, else one after the other."""
    if isinstance(steps, OverlappingSteps) and options.submission.shards <= 1 and options.submission.overlap:
        prepared, total = await steps.record_and_submit(options, observer)  # observer.prepared on the way
        await observer.batches_done(total)
        return prepared, total
    prepared = await steps.prepare(options)
    await observer.prepared(prepared)
    if options.submission.shards > 1:
        total = await steps.submit_shards(prepared, options)
        await observer.batches_done(total)
    else:
        total = await submit_all(prepared, steps, options, observer)
    return prepared, total


async def submit_all(prepared: Prepared, steps: Steps, options: RunOptions, observer: RunObserver) -> BatchResult:
    """Every batch, ``parallel_batches`` at a time, under one budget and one submit deadline.

    The client's concurrency is split between the batches that run together, so the
    service sees at most ``concurrency`` requests in flight. A sliding window: the next batch
    starts as soon as one finishes (a window that waited for its slowest batch left its
    share of the concurrency idle, issue 26). A batch that raises (a fatal error: 401, the
    ledger unreachable) stops new batches and fails the run once those in flight have finished.
    """
    sub = options.submission
    run_send = SubmitOptions.for_run(sub)  # one budget and one deadline for every batch
    groups = prepared.batches
    window = max(1, sub.parallel_batches)
    per_batch = max(1, sub.concurrency // max(1, min(window, len(groups) or 1)))
    total = BatchResult()  # the running sum the observer sees
    results: dict[int, BatchResult] = {}
    failure: BaseException | None = None
    running: dict[asyncio.Future[BatchResult], int] = {}

    async def settle(done: set[asyncio.Future[BatchResult]]) -> None:
        nonlocal total, failure
        for task in done:
            number, exc = running.pop(task), task.exception()
            if exc is not None:
                failure = failure or exc
            else:
                results[number] = task.result()
                total = total.merge(results[number])
        await observer.batches_done(total)

    for number, batch in enumerate(groups, start=1):
        if len(running) >= window:
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            await settle(done)
        if failure is not None:
            break
        running[asyncio.ensure_future(steps.submit(
            batch, prepared=prepared, number=number, count=len(groups), send=run_send.but(concurrency=per_batch)
        ))] = number  # fmt: skip
    if running:
        done, _ = await asyncio.wait(running)
        await settle(done)
    if failure is not None:
        raise failure
    ordered = BatchResult()  # in batch order, as the rows' failures are listed
    for number in sorted(results):
        ordered = ordered.merge(results[number])
    return ordered


def summary_rejections(plan: PlanFigures) -> list[dict[str, str | int | None]]:
    """The rejected rows as plain dicts (row, document_id, field, code, reason)."""
    return [
        {"row": r.row_number, "document_id": r.document_id, "field": r.field, "code": r.code, "reason": r.reason}
        for r in plan.rejections
    ]


def in_doubt_reasons(ledger: Ledger, campaign: str, limit: int = 3) -> list[str]:
    """The distinct messages of the campaign's documents in doubt: each names the mismatch
    (no list, no metadata...) and the next step, which the count alone does not."""
    from doccheck.ledger import in_doubt_reasons as read_reasons

    with ledger.session() as s:
        return read_reasons(s, campaign, limit)


def close_run(
    ledger: Ledger,
    prepared: Prepared,
    *,
    batch: BatchResult,
    waited: WaitResult | None,
    wait: bool,
    started: float,
) -> RunSummary:
    """Close the run in the ledger and build the summary from the ledger's own counts.

    Status: ``finished`` when no product is pending, ``pending`` (waited, timed out) or
    ``submitted`` (did not wait) otherwise, and ``incomplete`` whenever documents were left
    unsent at the submit deadline (the exit status says so).
    """
    counts = ledger.run_summary(prepared.run_id)
    products = products_from_summary(counts.get("products", {}))
    pending = sum(c.get("pending", 0) for c in products.values())
    status = "finished" if pending == 0 else ("pending" if wait else "submitted")
    if batch.incomplete:
        status = "incomplete"
    plan = prepared.plan
    summary = RunSummary(
        status=status,
        campaign=prepared.campaign,
        manifest=prepared.manifest,
        run_id=prepared.run_id,
        documents=prepared.documents,
        rejected=len(plan.rejections),
        counts_by_mode=plan.counts_by_mode(),
        as_text=int(counts.get("as_text", 0)),
        misnamed=int(counts.get("misnamed", 0)),
        total_words=plan.total_words(),
        estimated_cost_cents=plan.estimated_cost_cents(),
        submitted=batch.submitted,
        reused=batch.replayed + batch.already_done,
        # the ledger's count: a row that failed and was recovered since does not count
        submit_failed=counts.get("submissions", {}).get("failed", 0),
        unsent_budget=batch.skipped_budget,
        unsent_retry_later=batch.retry_later,
        in_flight_elsewhere=batch.in_flight_elsewhere,
        in_doubt=batch.in_doubt,
        in_doubt_reasons=in_doubt_reasons(ledger, prepared.campaign) if batch.in_doubt else [],
        products=products,
        pending=pending,
        timed_out=bool(waited and waited.timed_out),
        spent_cents=batch.cost_cents,
        **money_fields(counts),
        **notice_fields(counts),
        elapsed_seconds=round(time.monotonic() - started, 3),
        rejections=summary_rejections(plan),
        cohort_matches=prepared.cohort,
    )
    summary = with_export_rejections(summary)  # an LMS export's refused entries (issue 24)
    ledger.finish_run(prepared.run_id, status=status, summary=summary.model_dump(mode="json"))
    return summary


def prepare_run(
    ledger: Ledger, options: RunOptions, *, params: dict[str, Any] | None = None, run_id: str | None = None
) -> Prepared:
    """Start the run, record its manifest and match its cohort, in ONE streamed read of the file.

    Documents stream from ``doccheck.pipeline.planning._batches.start_recording`` straight into the
    cohort matcher while each batch (documents without their text, rejected rows) is written
    to the ledger underneath: a run interrupted before its last batch still reports the
    documents no batch reached (as ``unsent``), memory stays flat in the manifest's size,
    and the file is parsed once. Blocking (call it in a thread from async code).
    ``ManifestError`` for an unusable manifest is raised before the run is started;
    ``run_id`` records into that run (a retried task records into the same run).
    """
    return record_and_match(ledger, options, start_run_recording(ledger, options, params=params, run_id=run_id))


def start_run_recording(
    ledger: Ledger,
    options: RunOptions,
    *,
    params: dict[str, Any] | None = None,
    run_id: str | None = None,
    on_batch: Callable[[BatchRef], None] | None = None,
) -> PlanRecording:
    """The first half of :func:`prepare_run`: the manifest checked as a whole (an LMS export
    derived) and the run started; ``on_batch`` hears of each batch once it is recorded."""
    from doccheck.sources.lms import as_manifest

    source = options.source
    adopt_for_planning(ledger, options.connection.base_url)  # a type an earlier run was refused: planned as text
    manifest, _ = as_manifest(
        source.manifest, export_work_dir(options), lms=source.lms, attempts=source.attempts, roster=source.roster
    )
    return start_recording(
        ledger, manifest, campaign=source.campaign_name, products=source.products,
        metadata_columns=source.metadata_columns, params=params, batch_size=options.submission.batch_size,
        run_id=run_id, on_batch=on_batch,
    )  # fmt: skip


def record_and_match(
    ledger: Ledger, options: RunOptions, recording: PlanRecording, documents: Iterable[Any] | None = None
) -> Prepared:
    """The second half of :func:`prepare_run`: the rows read, recorded and cohort-matched in one
    pass (``documents``: the recording's stream, or a wrapper of it), the run's products stored."""
    from doccheck.matching import match_documents, summary_of

    result = match_documents(recording.documents() if documents is None else documents, recording.campaign,
                             run_id=recording.run_id, ledger=ledger, templates=options.source.templates)  # fmt: skip
    return prepared_from(recording.finish(), summary_of(result))


def export_work_dir(options: RunOptions) -> Path:
    """Where an LMS export's documents are copied for a run: ``<out_dir>/exports`` (for an
    ``out_dir`` on a store, under the local folder its run folders are built in)."""
    from doccheck.storage import resolve, scratch_folder

    return scratch_folder(resolve(options.output.out_dir)) / "exports"


def prepared_from(recorded: RecordedPlan, cohort: dict[str, Any]) -> Prepared:
    """The orchestration's view of a recorded run: its figures and its batch refs."""
    return Prepared(run_id=recorded.run_id, manifest=recorded.manifest, plan=recorded.tally,
                    documents=recorded.documents, products=recorded.tally.products, batches=list(recorded.batches),
                    cohort=cohort, recorded=recorded)  # fmt: skip


class LocalSteps:
    """The steps as direct library calls in this process (no Prefect), one phase after the other.

    The manifest is recorded in one streamed pass and each batch re-read when it is sent
    (``doccheck.pipeline.planning._batches``). ``client`` is an open ``AsyncDocCheckClient``; ``on_submit(done)`` and
    ``on_results(done, total)`` feed a progress display; ``params`` are recorded with the
    run (never a secret). ``write_files=False`` leaves the run folder unwritten (a notebook
    without ``out_dir`` reads its tables from the ledger instead).
    ``doccheck.pipeline._overlap.OverlappingLocalSteps`` overlaps the phases instead.
    """

    def __init__(
        self,
        ledger: Ledger,
        client: Any,
        *,
        params: dict[str, Any] | None = None,
        on_submit: Any = None,
        on_results: Any = None,
        write_files: bool = True,
    ) -> None:
        self._ledger = ledger
        self._client = client
        self._params = params or {}
        self._on_submit = on_submit
        self._on_results = on_results
        self._write_files = write_files
        self._submitted: dict[int, int] = {}

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    async def prepare(self, options: RunOptions) -> Prepared:
        """Record the run and its documents and match the cohort, off the event loop."""
        return await asyncio.to_thread(prepare_run, self._ledger, options, params=self._params)

    async def submit(self, batch: Any, *, prepared: Prepared, number: int, count: int,
                     send: SubmitOptions) -> BatchResult:  # fmt: skip
        """Load one recorded batch from the ledger and submit it with this process's client."""
        from doccheck.pipeline.sending._submitter import submit_batch

        def progress(p: Any) -> None:
            self._submitted[number] = p.done
            if self._on_submit is not None:
                self._on_submit(sum(self._submitted.values()))

        assert prepared.recorded is not None and isinstance(batch, BatchRef)
        loaded = await asyncio.to_thread(prepared.recorded.load, self._ledger, batch)  # off the event loop
        sent = await submit_batch(
            self._client, self._ledger, prepared.run_id, loaded.documents, send.but(on_progress=progress)
        )
        return loaded.result().merge(sent)

    async def submit_shards(self, prepared: Prepared, options: RunOptions) -> BatchResult:
        """Refused: shards are Prefect flow runs on a work pool, which the library cannot start."""
        from doccheck.client import ConfigurationError

        raise ConfigurationError("shards run on Prefect workers: use the bulk_check flow (or `doccheck run --shards`)")

    async def wait(self, run_id: str, waiting: WaitingOptions) -> WaitResult:
        """Wait for the run's results: webhook events first, polling as the fallback."""
        from doccheck.pipeline.collecting._results import wait_for_results

        def progress(p: Any) -> None:
            if self._on_results is not None:
                self._on_results(p.done, p.total)

        return await wait_for_results(self._client, self._ledger, run_id, timeout=waiting.timeout,
                                      grace_seconds=waiting.grace_seconds, poll_interval=waiting.poll_interval,
                                      on_progress=progress)  # fmt: skip

    async def apply_events(self) -> int:
        """Apply the verified webhook events the receiver stored; the count applied."""
        from doccheck.pipeline.collecting._results import apply_events

        return apply_events(self._ledger)

    async def write_outputs(self, summary: RunSummary, options: RunOptions) -> RunSummary:
        """The run folder as ``doccheck run`` writes it (reports, files, report.html)."""
        from doccheck.guards import naming
        from doccheck.pipeline.collecting._results import report_tables

        if not self._write_files or summary.run_id is None:
            return summary
        tables = report_tables(self._ledger, summary.run_id)
        with naming(options.output.out_dir):  # a full disk names the reports folder
            return await self._write_run_folder(summary, options, tables)

    async def _write_run_folder(self, summary: RunSummary, options: RunOptions, tables: Any) -> RunSummary:
        """Reports, downloads and the instructor's files of a closed run (see write_outputs)."""
        from doccheck.outputs import RULE_OPTIONS, run_label, write_reports
        from doccheck.outputs.instructor import write_run_outputs
        from doccheck.storage import display

        assert summary.run_id is not None
        paths = write_reports(options.output.out_dir, run_label(summary.campaign, summary.run_id), tables,
                              metadata=self._ledger.document_metadata(summary.run_id) or None, staged=True)  # fmt: skip
        outputs = await write_run_outputs(
            paths.run_dir, paths.latest_dir, campaign=summary.campaign, run_id=summary.run_id, ledger=self._ledger,
            client=self._client if options.output.download else None, download=tuple(options.output.download),
            download_concurrency=min(options.submission.concurrency, 8), status=summary.status,
            spent_cents=summary.spent_cents, rules=options.output.model_dump(include=set(RULE_OPTIONS)),
        )  # fmt: skip
        summary.report_dir, summary.latest_dir = display(paths.run_dir), display(paths.latest_dir)
        summary.report_html = display(outputs.paths.report_html)
        summary.downloads = outputs.downloads.as_dict() if outputs.downloads is not None else None
        return summary
