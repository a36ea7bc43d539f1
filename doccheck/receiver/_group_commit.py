"""The receiver's writes, committed in groups: one transaction for every delivery waiting.

Why: each delivery is stored before it is answered (a 2xx means "kept"), and a commit is
the expensive part of a store (a file sync on SQLite, a round trip on PostgreSQL). Under a
flood (a sender's retries after an outage, a term's results landing at once) one commit a
delivery queued the writers behind SQLite's busy handler, whose sleeps grow: answers took
seconds (``benchmarks/receiver_flood.py``). Here deliveries arriving while a group commits
wait for the next group, so a flood costs a few commits, and each delivery is answered as
soon as its group is durable. A group that fails is retried one delivery at a time, so one
bad delivery fails alone.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.concurrency import run_in_threadpool

from doccheck.ledger import Ledger

log = logging.getLogger(__name__)

#: Deliveries in one transaction at most (a flood is cut in groups of this size).
MAX_GROUP = 256


class GroupWriter:
    """``await store(event, body)`` → True stored, False duplicate; raises when it cannot be stored."""

    def __init__(self, ledger: Ledger, max_group: int = MAX_GROUP) -> None:
        self.ledger = ledger
        self.max_group = max_group
        self._waiting: list[tuple[Any, bytes, asyncio.Future[bool]]] = []
        self._writing = False

    async def store(self, event: Any, body: bytes) -> bool:
        """Store one verified delivery in the next group commit; its own answer."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((event, body, future))
        if not self._writing:
            self._writing = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
                group, self._waiting = self._waiting[: self.max_group], self._waiting[self.max_group :]
                await self._commit(group)
        finally:
            self._writing = False

    async def _commit(self, group: list[tuple[Any, bytes, asyncio.Future[bool]]]) -> None:
        try:
            stored = await run_in_threadpool(self.ledger.record_events, [(e, b) for e, b, _ in group])
        except Exception:  # noqa: BLE001 - retried alone: one bad delivery must not fail its group
            if len(group) == 1:
                _settle(group[0][2], error=True)
                return
            for item in group:
                await self._commit([item])
            return
        for (_, _, future), fresh in zip(group, stored, strict=True):
            _settle(future, value=fresh)


def _settle(future: asyncio.Future[bool], *, value: bool = False, error: bool = False) -> None:
    if future.done():  # the delivery's request went away meanwhile
        return
    if error:
        future.set_exception(RuntimeError("the event could not be stored"))
    else:
        future.set_result(value)
