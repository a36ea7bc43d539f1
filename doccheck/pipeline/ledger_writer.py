"""One thread that runs a submit batch's ledger calls, off the event loop, in awaited order.

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
from typing import Any, TypeVar

from doccheck.ledger.transient import retry_transient

__all__ = ["LedgerWriter"]

T = TypeVar("T")


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
