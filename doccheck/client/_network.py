"""httpcore's network backend on asyncio's own streams, for the async client's connection lanes.

Why: httpx reaches the network through httpcore's ``AnyIOBackend``, which wraps every read and
write in ``anyio.fail_after`` (a cancel scope, the running library looked up by ``sniffio``,
the current task looked up twice) and every send in a cancel-shielded checkpoint. At the
pipeline's rate that bookkeeping was a sixth of the client's CPU: a bare httpx loop took
0.64-0.70 ms of CPU a request with anyio and 0.52-0.60 ms with this backend (3,000
``POST /checks`` at concurrency 16, six alternated runs, issue 26; docs/benchmarks.md). The
submitting process shares the machine with the ledger's database, so CPU it does not spend
is latency its requests do not wait.

httpcore documents the network backend as its extension point (``AsyncNetworkBackend``); this
one keeps httpcore's contract: its exceptions (``ConnectError``, ``ReadTimeout``, …, which
httpx turns into its own), ``b""`` at the end of the stream, TLS by ``start_tls`` (the
connection's and a proxy tunnel's), and the ``get_extra_info`` names httpcore asks for
(``is_readable`` decides whether an idle kept-alive connection was closed by the server).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Coroutine, Iterable
from typing import Any

import httpcore
from httpcore import AsyncNetworkBackend, AsyncNetworkStream
from httpcore._utils import is_socket_readable

__all__ = ["AsyncioNetworkBackend", "AsyncioStream", "use_asyncio_network"]

#: ``socket_options`` as httpcore passes them to ``setsockopt``.
SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


class AsyncioStream(AsyncNetworkStream):
    """One connection: asyncio's ``StreamReader``/``StreamWriter`` pair."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    # asyncio's errors become httpcore's, which httpx turns into ``httpx.ReadTimeout`` and the
    # rest; inline ``try`` rather than a context manager: these run twice a request.
    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.ReadError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._writer.write(buffer)
            async with asyncio.timeout(timeout):
                await self._writer.drain()  # raises once the connection is lost
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.WriteError(exc) from exc

    async def aclose(self) -> None:
        """As anyio does: drop the connection at once (nothing is left to flush that matters),
        then let the loop run ``connection_lost``."""
        self._writer.transport.abort()
        await asyncio.sleep(0)

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except BaseException as exc:
            await self.aclose()
            if isinstance(exc, TimeoutError):
                raise httpcore.ConnectTimeout(exc) from exc
            if isinstance(exc, OSError):  # ssl.SSLError too
                raise httpcore.ConnectError(exc) from exc
            raise
        return self

    def get_extra_info(self, info: str) -> Any:
        writer = self._writer
        if info == "ssl_object":
            return writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return writer.get_extra_info("sockname")
        if info == "server_addr":
            return writer.get_extra_info("peername")
        if info == "socket":
            return writer.get_extra_info("socket")
        if info == "is_readable":
            return self._is_readable()
        return None

    def _is_readable(self) -> bool:
        """Data or the end of the stream is waiting: on an idle connection, the server closed it
        (or sent something unasked). asyncio's transport reads the socket as data comes, so its
        buffer is looked at besides the socket itself."""
        reader = self._reader
        if reader.at_eof() or reader.exception() is not None or getattr(reader, "_buffer", None):
            return True
        if self._writer.transport.is_closing():
            return True
        sock = self._writer.get_extra_info("socket")
        if sock is None:
            return True
        return is_socket_readable(sock)  # httpcore's own test: ``poll`` without waiting


async def _connecting(
    opening: Coroutine[Any, Any, tuple[asyncio.StreamReader, asyncio.StreamWriter]], timeout: float | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        async with asyncio.timeout(timeout):
            return await opening
    except TimeoutError as exc:
        raise httpcore.ConnectTimeout(exc) from exc
    except OSError as exc:
        raise httpcore.ConnectError(exc) from exc


def _apply(writer: asyncio.StreamWriter, options: Iterable[SocketOption] | None) -> None:
    """httpcore's ``socket_options`` on a new connection, which is dropped if one is refused."""
    sock = writer.get_extra_info("socket")
    try:
        for option in options or ():
            sock.setsockopt(*option)
    except OSError as exc:
        writer.transport.abort()
        raise httpcore.ConnectError(exc) from exc


class AsyncioNetworkBackend(AsyncNetworkBackend):
    """Connections opened with ``asyncio.open_connection`` / ``open_unix_connection``."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        reader, writer = await _connecting(asyncio.open_connection(host, port, local_addr=local), timeout)
        _apply(writer, socket_options)  # asyncio sets TCP_NODELAY itself, as anyio does
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SocketOption] | None = None
    ) -> AsyncNetworkStream:
        reader, writer = await _connecting(asyncio.open_unix_connection(path), timeout)
        _apply(writer, socket_options)
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def use_asyncio_network(transport: Any) -> bool:
    """Give an ``httpx.AsyncHTTPTransport`` this backend; False (and httpx's own kept) when its
    connection pool has no backend to replace, as a future httpx or httpcore might not.

    httpx's transport takes no ``network_backend`` argument, so the pool's is replaced after
    construction: ``httpcore.AsyncConnectionPool`` and its proxy subclasses keep it in
    ``_network_backend`` (checked by tests/unit/client/test_client_network.py against the lock's
    versions)."""
    pool = getattr(transport, "_pool", None)
    if pool is None or not isinstance(getattr(pool, "_network_backend", None), AsyncNetworkBackend):
        return False
    pool._network_backend = AsyncioNetworkBackend()
    return True
