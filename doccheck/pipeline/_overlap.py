"""A run whose phases overlap: batches are sent while later ones are still read, recorded and matched.

Why (issue 26): ``run_checks`` read, recorded and cohort-matched the whole manifest before the
first request, then sent the batches ``parallel_batches`` at a time, each at a share of the
concurrency. Here the manifest is recorded and matched on a worker thread exactly as
``orchestrate.prepare_run`` does, and each batch, once committed, is handed with its planned
documents (the very objects recorded: the manifest is not read a second time) to ONE streaming
submitter (:func:`~doccheck.pipeline.sending._submit_stream.submit_stream`) that sends it at the run's
full concurrency. At most :data:`BATCHES_AHEAD` batches wait for the submitter; past that the
recording waits, so memory stays flat in the manifest's size.

What does not change: a batch is sent only after its documents are committed to the ledger (the
recording's transaction comes before the hand-over), and each document goes through the same
claim → ``submitting``/``sending`` → request → answer order, so a crash at any point leaves what
the sequential run would have left (plus, at most, batches not recorded yet, which were never
sent). Cohort matching still completes before the summary and the reports (the caller awaits
this whole function first); the dry run does not come here and lists its pairs before anything
is paid. A manifest that turns out unusable mid-file (a runaway row) stops the recording as
before; the documents of the batches already recorded are sent, and the error is raised once
they are settled. A fatal submit error (a 401) stops the recording at its next row.

Who runs it: ``doccheck run`` without a Prefect server and the notebook (:class:`OverlappingLocalSteps`), and the
``bulk_check`` flow (``prefect_doccheck.tasks._steps.TaskSteps``: one ``record and submit`` task
run calls :func:`record_and_submit`, and the flow hears of the recorded run through the observer
to log the plan and open its progress artifact in its own context). Sharded runs and
``submission.overlap=False`` keep the sequential path.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from doccheck.errors import RecordingStopped
from doccheck.ledger import Ledger
from doccheck.pipeline._batch_result import BatchResult
from doccheck.pipeline._options import RunOptions
from doccheck.pipeline._orchestrate import LocalSteps, Prepared, RunObserver, record_and_match, start_run_recording
from doccheck.pipeline._progress import ProgressCallback
from doccheck.pipeline.planning._batches import BatchRef, PlanRecording, read_batch
from doccheck.pipeline.sending._submit_options import SubmitOptions
from doccheck.pipeline.sending._submit_stream import submit_stream

__all__ = ["OverlappingLocalSteps", "RecordingStopped", "record_and_submit"]


#: Recorded batches waiting for the submitter at most; past that the recording thread waits
#: (texts in memory stay a few batches, however far the recording runs ahead of the network).
BATCHES_AHEAD = 4


async def record_and_submit(
    ledger: Ledger,
    client: Any,
    options: RunOptions,
    *,
    params: dict[str, Any] | None = None,
    observer: RunObserver | None = None,
    on_progress: ProgressCallback | None = None,
    run_id: str | None = None,
) -> tuple[Prepared, BatchResult]:
    """Record and cohort-match ``options``' manifest while its recorded batches are submitted.

    Returns the recorded run (as ``prepare_run`` would) and what the submission did (as
    ``submit_all`` would). ``observer.prepared`` is told once the recording is complete, while
    requests may still be in flight, on this event loop. ``run_id``: record into this run
    (the flow chooses it, so the run it logs is the run recorded; see ``prepare_run``).
    """
    observer = observer or RunObserver()
    handover = _Handover(asyncio.get_running_loop(), BATCHES_AHEAD)
    recording = await asyncio.to_thread(start_run_recording, ledger, options, params=params, run_id=run_id,
                                        on_batch=handover.recorded)  # fmt: skip
    recorder = asyncio.ensure_future(
        asyncio.to_thread(record_and_match, ledger, options, recording, handover.documents(recording))
    )
    recorder.add_done_callback(handover.end)  # after every batch: the same loop's queue, in order
    refused: list[BatchResult] = []
    batches = _batches(ledger, recording, handover, refused, recorder, observer)
    send = SubmitOptions.for_run(options.submission).but(on_progress=on_progress)
    try:
        sent = await submit_stream(client, ledger, recording.run_id, batches, send, recorded=True)
    except BaseException:
        handover.stop.set()
        with contextlib.suppress(Exception):
            await recorder
        raise
    prepared = await recorder  # a mid-file ManifestError is raised here, once the sent documents are settled
    recording.close()  # every batch is sent: its listing is not held through the reports
    for result in refused:
        sent = result.merge(sent)
    return prepared, sent


class OverlappingLocalSteps(LocalSteps):
    """:class:`~doccheck.pipeline._orchestrate.LocalSteps` whose run overlaps its phases
    (``orchestrate.OverlappingSteps``): what ``doccheck run`` without a Prefect server and the notebook use.
    The plain ``LocalSteps`` runs them one after the other (record and match everything, then send)."""

    async def record_and_submit(self, options: RunOptions, observer: RunObserver) -> tuple[Prepared, BatchResult]:
        """Record and match the run on a worker thread while its recorded batches are sent."""

        def progress(p: Any) -> None:
            if self._on_submit is not None:
                self._on_submit(p.done)

        return await record_and_submit(self.ledger, self._client, options, params=self._params, observer=observer,
                                       on_progress=progress)  # fmt: skip


class _Handover:
    """Recorded batches from the recording thread to the event loop.

    The recording yields each planned document (text included) to the cohort matcher through
    :meth:`documents`, which keeps the current batch's; once the batch is committed the
    recording calls :meth:`recorded`, which hands those very documents over: what is sent is
    what was recorded, without reading the manifest again. Should the documents kept not be
    the batch's (a consumer that stopped early), the ref is handed over instead and the batch
    re-read from the manifest (``read_batch``, which refuses rows changed since).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, ahead: int) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[list[Any] | BatchRef | None] = asyncio.Queue()
        self.slots = threading.Semaphore(ahead)
        self.stop = threading.Event()
        self._current: list[Any] = []

    def documents(self, recording: PlanRecording) -> Iterator[Any]:
        """The recording's documents, kept for their batch; until ``stop`` (then :class:`RecordingStopped`)."""
        for doc in recording.documents():
            if self.stop.is_set():
                raise RecordingStopped("the submission failed; recording stopped")
            self._current.append(doc)
            yield doc

    def recorded(self, ref: BatchRef) -> None:
        """On the recording thread, once ``ref`` is committed: hand its documents over (waits
        while :data:`BATCHES_AHEAD` batches are waiting already)."""
        mine = [d for d in self._current if ref.first_row <= d.row_number <= ref.last_row]
        self._current = [d for d in self._current if d.row_number > ref.last_row]
        while not self.slots.acquire(timeout=0.2):
            if self.stop.is_set():
                raise RecordingStopped("the submission failed; recording stopped")
        item: list[Any] | BatchRef = mine if len(mine) == ref.documents else ref
        self.loop.call_soon_threadsafe(self.queue.put_nowait, item)

    def end(self, _: Any = None) -> None:
        """The recording ended (done, failed or stopped): no more batches."""
        self.queue.put_nowait(None)

    async def items(self) -> AsyncIterator[list[Any] | BatchRef]:
        """What the recording handed over, in order, until it ended."""
        while (item := await self.queue.get()) is not None:
            self.slots.release()
            yield item


async def _batches(
    ledger: Ledger,
    recording: PlanRecording,
    handover: _Handover,
    refused: list[BatchResult],
    recorder: asyncio.Future[Prepared],
    observer: RunObserver,
) -> AsyncIterator[list[Any]]:
    """Each recorded batch's documents as the submitter asks for them; the observer hears of the
    whole recorded run once the last batch has come."""
    async for item in handover.items():
        if not isinstance(item, BatchRef):
            yield item
            continue
        loaded = await asyncio.to_thread(
            read_batch, ledger, recording.run_id, recording.manifest, item, campaign=recording.campaign,
            products=recording.default_products, metadata_columns=recording.metadata_columns,
        )  # fmt: skip
        if loaded.failures:
            refused.append(loaded.result())
        yield loaded.documents
    if recorder.done() and not recorder.cancelled() and recorder.exception() is None:
        await observer.prepared(recorder.result())
