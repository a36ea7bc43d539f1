"""One thread that runs a submit batch's ledger calls, off the event loop, in awaited order,
and the group commit that hands it many documents' writes at once.

Why: every document costs the ledger several short transactions (claim, ``submitting``,
``sending``, the answer, the release). Run on the event loop, each commit stalled every
request in flight, and submission ran at about half the speed of a plain httpx loop
(issue 10). Awaiting them through :class:`LedgerWriter` lets the other requests travel
while a commit waits on the disk, and keeps the crash-safety order of docs/ledger.md:
the coroutine that records ``submitting`` resumes, and only then sends, after the write
has committed. One thread (not ``asyncio.to_thread``'s pool) because the ledger's
writers queue on one database lock anyway, and an in-memory SQLite ledger shares one
connection that must not be used by two threads at once.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from doccheck.ledger import retry_transient

if TYPE_CHECKING:
    from doccheck.ledger import Ledger

__all__ = ["GroupCommit", "LedgerWriter"]

T = TypeVar("T")
R = TypeVar("R")


class LedgerWriter:
    """Runs blocking ledger calls on one dedicated thread; ``await writer.call(fn, ...)``."""

    def __init__(self, name: str = "doccheck-ledger") -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the writer thread; returns (or raises) once it has run.
        A lost database connection is retried there for a few seconds (``retry_transient``):
        the batch's other ledger calls queue behind it, in order, while the database restarts."""
        loop = asyncio.get_running_loop()
        call = functools.partial(fn, *args, **kwargs)
        return await loop.run_in_executor(self._pool, functools.partial(retry_transient, call))

    def close(self) -> None:
        """Wait for the calls already queued, then stop the thread."""
        self._pool.shutdown(wait=True)


#: Event-loop turns a group commit waits before it takes its group (no timer, no latency
#: beyond those turns): the documents woken by the previous commit, and the ones they let
#: start, add their writes to the same transaction instead of the next one.
GATHER_TURNS = 3


class GroupCommit(Generic[T, R]):
    """Group commit on the batch's writer thread: ``await group.record(item)`` returns once
    ``many(ledger, items)`` has committed it together with every item that came meanwhile.

    ``target`` and ``max_wait``: after its turns, a commit with fewer than ``target``
    items waits up to ``max_wait`` seconds for more, unless ``idle()`` says nothing else
    can add any (no request in flight). Why: a transaction's cost is mostly per
    transaction (13 statements, a commit, two thread hand-offs), so rounds of ~1-4
    documents spent ~0.8 ms of CPU a document; rounds of ~8-16 spend a third of that
    (issue 10). The wait is bounded and taken while requests travel, so it adds no
    idle time when the batch keeps enough documents in progress.
    """

    def __init__(
        self,
        ledger: Ledger,
        writer: LedgerWriter,
        many: Callable[[Ledger, list[T]], list[R] | None],
        *,
        target: int = 1,
        max_wait: float = 0.0,
        idle: Callable[[], bool] | None = None,
    ) -> None:
        self.ledger = ledger
        self.writer = writer
        self.many = many
        self.target = target
        self.max_wait = max_wait
        self.idle = idle or (lambda: True)
        self._pending: list[tuple[T, asyncio.Future[R | None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._enough: asyncio.Event | None = None

    async def record(self, item: T) -> R | None:
        """Return ``item``'s result once it is committed."""
        future: asyncio.Future[R | None] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        self.nudge()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        try:
            return await asyncio.shield(future)  # the caller's cancellation must not cancel the group
        except asyncio.CancelledError:
            _give_up(future)
            raise

    def nudge(self) -> None:
        """Commit now if the group is big enough or nothing else can join it (call it
        when the condition behind ``idle`` may have changed)."""
        if self._enough is not None and (len(self._pending) >= self.target or self.idle()):
            self._enough.set()

    async def _gather(self) -> None:
        for _ in range(GATHER_TURNS):  # let the coroutines woken with this one add theirs
            await asyncio.sleep(0)
        if self.max_wait <= 0 or len(self._pending) >= self.target or self.idle():
            return
        self._enough = asyncio.Event()
        try:
            await asyncio.wait_for(self._enough.wait(), self.max_wait)
        except TimeoutError:
            pass
        finally:
            self._enough = None

    async def _flush(self) -> None:
        """Commit what is pending, group by group. The item of a caller that is gone is still
        written with its group (a cancelled write leaves at most what a crash leaves), but its
        future is settled by no one: the caller gave it up (:func:`_give_up`)."""
        while self._pending:
            await self._gather()
            group, self._pending = self._pending, []
            try:
                results = await self.writer.call(self.many, self.ledger, [item for item, _ in group])
            except Exception:  # noqa: BLE001 - one bad item must not fail the others: one by one
                for item, future in group:
                    try:
                        one = await self.writer.call(self.many, self.ledger, [item])
                    except Exception as exc:  # noqa: BLE001
                        _settle(future, exception=exc)
                    else:
                        _settle(future, one[0] if one else None)
                continue
            for i, (_, future) in enumerate(group):
                _settle(future, results[i] if results else None)


def _give_up(future: asyncio.Future[Any]) -> None:
    """The caller of ``record`` is gone (its batch was cancelled): its future is cancelled now,
    so that no outcome is set on it later. An error set on a future nobody awaits (a writer
    closed meanwhile: "cannot schedule new futures after shutdown") was logged when the future
    was collected, "Future exception was never retrieved", whenever the loop stopped before a
    callback could read it. An outcome already there is read now, for the same reason."""
    if not future.cancel() and not future.cancelled():
        future.exception()


def _settle(future: asyncio.Future[Any], result: Any = None, *, exception: BaseException | None = None) -> None:
    """Set ``future``'s outcome unless its caller gave it up (:func:`_give_up`)."""
    if future.done():
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result)
