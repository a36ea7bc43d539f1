"""``submit_stream``: one submitter over a stream of batches, each sent as soon as it is recorded (issue 26).

Why: ``submit_batch`` sends one batch with its own ledger thread, and a run sent its batches
``parallel_batches`` at a time, each at a share of the concurrency, after the whole manifest was
read, recorded and cohort-matched. Every batch ended with its slowest requests while the next
one had not started, and the network sat idle while the manifest was read. Here ONE
:class:`~doccheck.pipeline.sending._submitter._BatchSubmitter` (one ledger thread, one request window at the
full concurrency, one set of claims) takes the batches as they come: the next batch is asked for
while the previous one's documents are still in flight, so the requests never wait for a batch
boundary, and the recording of later batches runs beside the requests of earlier ones.

What each document goes through is ``submit_batch``'s, unchanged (claim, ``submitting`` and
``sending`` before the request, the answer after it, the reconciliation of keys in doubt), so
crash order and claims are the same; only the feeding differs. Memory stays bounded: a batch is
asked for only when fewer than :data:`AHEAD_PER_SLOT` × concurrency documents are in progress.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger, previous_submissions, record_documents
from doccheck.pipeline._batch_result import BatchResult
from doccheck.pipeline._failures import first_error
from doccheck.pipeline._gc_freeze import collections_skip_older_objects
from doccheck.pipeline._learnt_types import adopt_learnt_refusals, service_of
from doccheck.pipeline._progress import report
from doccheck.pipeline.sending._attempts import begin_attempt, count_done
from doccheck.pipeline.sending._submit_options import DEFAULT_SUBMIT, SubmitOptions
from doccheck.pipeline.sending._submitter import PIPELINE_DEPTH, _BatchSubmitter

__all__ = ["AHEAD_PER_SLOT", "submit_stream"]

#: The next batch is asked for once fewer than this many documents per request slot are in
#: progress: twice the submitter's window, so a batch is loaded (re-read from the manifest, off
#: the event loop) while the window is still full, and texts in memory stay a few hundred.
AHEAD_PER_SLOT = 2 * PIPELINE_DEPTH


class _Room:
    """Documents started and not finished yet; ``wait`` blocks while there are more than ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0
        self._room = asyncio.Event()
        self._room.set()

    def add(self) -> None:
        self.open += 1
        if self.open > self.limit:
            self._room.clear()

    def done(self) -> None:
        self.open -= 1
        if self.open <= self.limit:
            self._room.set()

    async def wait(self) -> None:
        while self.open > self.limit:
            await self._room.wait()


async def submit_stream(
    client: AsyncDocCheckClient,
    ledger: Ledger,
    run_id: str,
    batches: AsyncIterator[Sequence[Any]],
    options: SubmitOptions = DEFAULT_SUBMIT,
    *,
    recorded: bool = False,
) -> BatchResult:
    """Submit every batch ``batches`` yields (lists of ``PlannedDocument``) for the run ``run_id``.

    Same rules as :func:`~doccheck.pipeline.sending._submitter.submit_batch` over all the batches at once (a
    key already submitted, or seen earlier in the stream, is not sent again; refusals are row
    failures; transient errors requeue until ``options.deadline_at``; a 401 raises
    :class:`~doccheck.pipeline._failures.FatalSubmitError`). Each batch's documents are recorded
    (``record_documents``; skipped when ``recorded``: the run's recording wrote them already) and
    their submissions read on the ledger thread before they start.
    """
    campaign = ledger.campaign_of(run_id)
    adopt_learnt_refusals(ledger, service_of(client))  # a type an earlier process was refused: its text at once
    submitter = _BatchSubmitter(
        client,
        ledger,
        campaign,
        options,
        run_id=run_id,  # a file refused as a type moves the run's documents to its text key
        total=0,
        attempt=begin_attempt(run_id, ()),  # the whole run's one attempt
    )
    room = _Room(AHEAD_PER_SLOT * max(1, options.concurrency))
    seen: set[str] = set()

    async def one(doc: Any, prev: Any) -> None:
        try:
            await submitter.run_one(doc, prev)
        finally:
            room.done()

    renewer = asyncio.create_task(submitter.renew_claims())
    try:
        with collections_skip_older_objects():
            async with asyncio.TaskGroup() as group:
                while True:
                    await room.wait()
                    documents = await anext(batches, None)
                    if documents is None:
                        break
                    for doc, prev in await _admit(submitter, run_id, documents, seen, recorded=recorded):
                        room.add()
                        group.create_task(one(doc, prev))
    except BaseExceptionGroup as eg:
        raise first_error(eg) from None
    finally:
        renewer.cancel()
        submitter.writer.close()
    return submitter.result


async def _admit(
    submitter: _BatchSubmitter, run_id: str, documents: Sequence[Any], seen: set[str], *, recorded: bool
) -> list[tuple[Any, Any]]:
    """Record one batch's documents, read their submissions, count those with nothing to do;
    returns the (document, previous submission) pairs to send."""
    ledger = submitter.ledger
    if not recorded:
        await submitter.writer.call(record_documents, ledger, run_id, submitter.campaign, documents)
    submitted, previous = await submitter.writer.call(
        previous_submissions, ledger, [d.idempotency_key for d in documents]
    )
    submitter.result.total += len(documents)
    to_send: list[tuple[Any, Any]] = []
    for doc in documents:
        if doc.idempotency_key in seen or doc.idempotency_key in submitted:
            count_done(submitter.result, submitter.attempt, doc.idempotency_key)
            submitter.done += 1
            continue
        seen.add(doc.idempotency_key)
        to_send.append((doc, previous.get(doc.idempotency_key)))
    if len(to_send) < len(documents):  # one progress report a batch for what needs nothing (a rerun: all)
        report(submitter.on_progress, submitter.done, submitter.result.total, "submit")
    return to_send
