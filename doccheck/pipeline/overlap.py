"""A run whose phases overlap: batches are sent while later ones are still read, recorded and matched.

Why (issue 26): ``run_checks`` read, recorded and cohort-matched the whole manifest before the
first request, then sent the batches ``parallel_batches`` at a time, each at a share of the
concurrency. Here the manifest is recorded and matched on a worker thread exactly as
``orchestrate.prepare_run`` does, and each batch, once committed, is handed to ONE streaming
submitter (:func:`~doccheck.pipeline.submit_stream.submit_stream`) that re-reads it from the
manifest and sends it at the run's full concurrency.

What does not change: a batch is sent only after its documents are committed to the ledger (the
recording's transaction comes before the hand-over), and each document goes through the same
claim → ``submitting``/``sending`` → request → answer order, so a crash at any point leaves what
the sequential run would have left (plus, at most, batches not recorded yet, which were never
sent). Cohort matching still completes before the summary and the reports (the caller awaits
this whole function first); the dry run does not come here and lists its pairs before anything
is paid. A manifest that turns out unusable mid-file (a runaway row) stops the recording as
before; the documents of the batches already recorded are sent, and the error is raised once
they are settled. A fatal submit error (a 401) stops the recording at its next row.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from doccheck.ledger import Ledger
from doccheck.pipeline.batch_result import BatchResult
from doccheck.pipeline.batches import BatchRef, PlanRecording, read_batch
from doccheck.pipeline.budget import Budget
from doccheck.pipeline.options import RunOptions
from doccheck.pipeline.orchestrate import LocalSteps, Prepared, RunObserver, record_and_match, start_run_recording
from doccheck.pipeline.progress import ProgressCallback
from doccheck.pipeline.submit_stream import submit_stream

__all__ = ["OverlappingLocalSteps", "RecordingStopped", "record_and_submit"]


class RecordingStopped(Exception):
    """The submission failed for good, so the recording stops (raised in the recording thread)."""


async def record_and_submit(
    ledger: Ledger,
    client: Any,
    options: RunOptions,
    *,
    params: dict[str, Any] | None = None,
    observer: RunObserver | None = None,
    on_progress: ProgressCallback | None = None,
) -> tuple[Prepared, BatchResult]:
    """Record and cohort-match ``options``' manifest while its recorded batches are submitted.

    Returns the recorded run (as ``prepare_run`` would) and what the submission did (as
    ``submit_all`` would, the rows refused as changed since recording included).
    ``observer.prepared`` is told once the recording is complete, while requests may still be
    in flight.
    """
    observer = observer or RunObserver()
    loop = asyncio.get_running_loop()
    refs: asyncio.Queue[BatchRef | None] = asyncio.Queue()
    stop = threading.Event()

    def on_batch(ref: BatchRef) -> None:  # on the recording thread, after the batch's commit
        loop.call_soon_threadsafe(refs.put_nowait, ref)

    recording = await asyncio.to_thread(start_run_recording, ledger, options, params=params, on_batch=on_batch)
    recorder = asyncio.ensure_future(
        asyncio.to_thread(record_and_match, ledger, options, recording, _stoppable(recording, stop))
    )
    recorder.add_done_callback(lambda _: refs.put_nowait(None))  # after every ref: the same loop's queue, in order
    refused: list[BatchResult] = []
    batches = _loaded_batches(ledger, recording, refs, refused, recorder, observer)
    sub = options.submission
    try:
        sent = await submit_stream(
            client, ledger, recording.run_id, batches, concurrency=sub.concurrency, webhook_url=sub.webhook_url,
            budget=Budget(sub.max_spend_cents) if sub.max_spend_cents is not None else None,
            on_progress=on_progress, deadline_at=time.time() + sub.submit_deadline,
        )  # fmt: skip
    except BaseException:
        stop.set()
        with contextlib.suppress(Exception):
            await recorder
        raise
    prepared = await recorder  # a mid-file ManifestError is raised here, once the sent documents are settled
    for result in refused:
        sent = result.merge(sent)
    return prepared, sent


class OverlappingLocalSteps(LocalSteps):
    """:class:`~doccheck.pipeline.orchestrate.LocalSteps` whose run overlaps its phases
    (``orchestrate.OverlappingSteps``): what ``doccheck run`` without a Prefect server uses.
    The plain ``LocalSteps`` runs them one after the other (record and match everything, then send)."""

    async def record_and_submit(self, options: RunOptions, observer: RunObserver) -> tuple[Prepared, BatchResult]:
        """Record and match the run on a worker thread while its recorded batches are sent."""

        def progress(p: Any) -> None:
            if self._on_submit is not None:
                self._on_submit(p.done)

        return await record_and_submit(self.ledger, self._client, options, params=self._params, observer=observer,
                                       on_progress=progress)  # fmt: skip


def _stoppable(recording: PlanRecording, stop: threading.Event) -> Iterator[Any]:
    """The recording's documents, until ``stop`` is set (then :class:`RecordingStopped`)."""
    for doc in recording.documents():
        if stop.is_set():
            raise RecordingStopped("the submission failed; recording stopped")
        yield doc


async def _loaded_batches(
    ledger: Ledger,
    recording: PlanRecording,
    refs: asyncio.Queue[BatchRef | None],
    refused: list[BatchResult],
    recorder: asyncio.Future[Prepared],
    observer: RunObserver,
) -> AsyncIterator[list[Any]]:
    """Each recorded batch re-read (off the event loop) as the submitter asks for it; the observer
    hears of the whole recorded run once the last ref has come."""
    load: Callable[[BatchRef], Any] = lambda ref: read_batch(  # noqa: E731
        ledger, recording.run_id, recording.manifest, ref, campaign=recording.campaign,
        products=recording.default_products, metadata_columns=recording.metadata_columns,
    )  # fmt: skip
    while (ref := await refs.get()) is not None:
        loaded = await asyncio.to_thread(load, ref)
        if loaded.failures:
            refused.append(loaded.result())
        yield loaded.documents
    if recorder.done() and not recorder.cancelled() and recorder.exception() is None:
        await observer.prepared(recorder.result())
