"""Pace the requests of one client by a rate limit shared with other processes (issue 12).

Why at the transport: every HTTP request the service sees passes there, including the
client's own retries and the ``GET /checks`` of reconciliation, so what is paced is
exactly what the service's rate limit counts. Why in chunks: the shared limit lives on
a server (a Prefect global concurrency limit, ``prefect_doccheck.tasks._rate_limit``);
one round trip per request would cost as much as the request, so slots are taken
``chunk`` at a time and spent locally. The library knows nothing of Prefect: the
shared acquisition is an async callable ``acquire(n)`` that returns once ``n`` slots
are granted. The client still honours 429 and ``Retry-After`` on its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx

from doccheck.client import ConnectionLanes

__all__ = ["Acquire", "ChunkPacer", "PacedTransport"]

#: ``await acquire(n)``: block until ``n`` request slots of the shared limit are granted.
Acquire = Callable[[int], Awaitable[None]]


class ChunkPacer:
    """Hands out request permits one by one, taking them from ``acquire`` ``chunk`` at a time.

    Concurrent callers share the permits of one acquisition; only one acquisition is in
    flight at a time (a lock), so a burst of callers does not take many chunks at once.
    ``acquired`` counts the slots taken from the shared limit (for tests and benchmarks).
    """

    def __init__(self, acquire: Acquire, chunk: int = 10) -> None:
        if chunk < 1:
            raise ValueError(f"chunk must be at least 1, got {chunk}")
        self._acquire = acquire
        self.chunk = chunk
        self._permits = 0
        self._lock = asyncio.Lock()
        self.acquired = 0
        self.used = 0

    async def permit(self) -> None:
        """Wait for one request permit."""
        async with self._lock:
            if self._permits == 0:
                await self._acquire(self.chunk)
                self.acquired += self.chunk
                self._permits = self.chunk
            self._permits -= 1
            self.used += 1


class PacedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that waits for a :class:`ChunkPacer` permit before each request."""

    def __init__(self, pacer: ChunkPacer, inner: httpx.AsyncBaseTransport | None = None, *,
                 max_connections: int = 20) -> None:  # fmt: skip
        self.pacer = pacer
        self.inner = inner if inner is not None else ConnectionLanes(max_connections)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await self.pacer.permit()
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
