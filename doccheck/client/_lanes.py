"""Connection lanes: the async client's transport, one kept-alive connection per request slot.

Why: httpx's default pool (httpcore 1.0) assigns a queued request to an idle HTTP/1.1
connection but leaves the connection ``IDLE`` until the waiting task runs, so requests
that start in the same event-loop turn are all handed the same connection; all but one
fail with ``ConnectionNotAvailable`` and go round the pool again, and every pass checks
every idle connection with two system calls (``getpeername`` and ``poll``)
(encode/httpcore#1110, #1035). The pipeline starts requests in bursts: a grouped ledger
commit wakes several documents at once. Measured at concurrency 16 (issue 10): ~2.7 extra
passes a request and ~9 idle connections probed each time; lanes took the submitting
process from ~2.5 to ~1.9 ms of CPU a document (docs/benchmarks.md).

A lane is an ``httpx.AsyncHTTPTransport`` limited to one connection. A request takes a free
lane (the most recently used first, so its connection is warm), and gives it back when its
response is closed. A lane is used by one request at a time, so no request can be handed a
busy connection, and each pass of a lane's pool looks at one connection. Retries, proxies
from the environment, timeouts and errors are httpx's own: each lane is a stock transport,
with httpcore's network backend on asyncio's streams (``_network``).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable

import httpx

from doccheck.client._config import tls_context
from doccheck.client._network import use_asyncio_network

__all__ = ["DEFAULT_LANES", "ConnectionLanes", "lanes_for"]

#: Connections of a client made without ``max_connections`` (the clients' default).
DEFAULT_LANES = 20


def lanes_for(concurrency: int) -> int:
    """Lanes for a client that sends ``concurrency`` requests at once: one each, and at
    least the default (the same client also polls and downloads)."""
    return max(DEFAULT_LANES, concurrency)


class _ReleasingStream(httpx.AsyncByteStream):
    """A response body that hands its lane back when it is closed (once)."""

    def __init__(self, inner: httpx.AsyncByteStream, release: Callable[[], None]) -> None:
        self._inner = inner
        self._release: Callable[[], None] | None = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


class ConnectionLanes(httpx.AsyncBaseTransport):
    """``lanes`` single-connection transports; a request waits for a free one.

    ``verify`` and ``trust_env`` are passed to every lane, with ONE TLS context for all of
    them (loading the CA bundle costs ~20 ms a context): the process's default one
    (``_config.tls_context``) unless ``verify`` says otherwise. Waiting for a lane honours the
    request's ``pool`` timeout, as httpx's pool does, and raises ``httpx.PoolTimeout``.
    """

    def __init__(
        self,
        lanes: int = DEFAULT_LANES,
        *,
        verify: ssl.SSLContext | str | bool = True,
        trust_env: bool = True,
        keepalive_expiry: float | None = 5.0,
    ) -> None:
        if lanes < 1:
            raise ValueError(f"lanes must be at least 1, not {lanes}")
        if isinstance(verify, ssl.SSLContext):
            context = verify
        elif verify is True and trust_env:
            context = tls_context()  # the process's, made once
        else:
            context = httpx.create_ssl_context(verify, trust_env=trust_env)
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=keepalive_expiry)
        self._lanes = [
            httpx.AsyncHTTPTransport(verify=context, trust_env=trust_env, limits=limits) for _ in range(lanes)
        ]
        for lane in self._lanes:  # asyncio's streams instead of anyio's: a sixth less CPU a request
            use_asyncio_network(lane)
        self._free: asyncio.LifoQueue[httpx.AsyncHTTPTransport] | None = None

    @property
    def lanes(self) -> int:
        """How many requests may be in flight at once."""
        return len(self._lanes)

    def _queue(self) -> asyncio.LifoQueue[httpx.AsyncHTTPTransport]:
        if self._free is None:  # made in the running loop, at the first request
            self._free = asyncio.LifoQueue()
            for lane in reversed(self._lanes):
                self._free.put_nowait(lane)
        return self._free

    async def _take(self, request: httpx.Request) -> httpx.AsyncHTTPTransport:
        free = self._queue()
        if not free.empty():
            return free.get_nowait()
        timeout = (request.extensions.get("timeout") or {}).get("pool")
        try:
            return await asyncio.wait_for(free.get(), timeout)
        except TimeoutError:
            raise httpx.PoolTimeout(
                f"no free connection lane within {timeout} s ({self.lanes} lanes busy)", request=request
            ) from None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        lane = await self._take(request)
        free = self._queue()
        try:
            response = await lane.handle_async_request(request)
        except BaseException:
            free.put_nowait(lane)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_ReleasingStream(response.stream, lambda: free.put_nowait(lane)),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        for lane in self._lanes:
            await lane.aclose()
