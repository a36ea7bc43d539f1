"""``doccheck.client._network``: httpcore's network backend on asyncio's streams keeps httpcore's
contract, over real sockets to a small local server: answers, httpx's exceptions for a refused
connection, a read timeout and a dropped response, a kept-alive connection the server closed,
TLS (and a certificate for the wrong name refused), a Unix socket, and the lanes using it."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpcore
import httpx
import pytest

from doccheck.client import ConnectionLanes
from doccheck.client._network import AsyncioNetworkBackend, use_asyncio_network

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def answer(body: bytes = b"ok") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


async def read_request(reader: asyncio.StreamReader) -> bool:
    """One request's head (our requests here have no body); False at the end of the stream."""
    try:
        await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return False
    return True


async def serve_answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while await read_request(reader):
        writer.write(answer())
        await writer.drain()
    writer.close()


@asynccontextmanager
async def local_server(handler: Handler, tls: ssl.SSLContext | None = None) -> AsyncIterator[tuple[str, list[int]]]:
    """A server on a free port; yields its origin and a list that counts its connections."""
    accepted: list[int] = []

    async def counted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            await handler(reader, writer)
        except (ConnectionError, ssl.SSLError):
            pass

    server = await asyncio.start_server(counted, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}", accepted
    finally:
        server.close()


def client(**kwargs: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=ConnectionLanes(1, **kwargs), timeout=2.0)  # type: ignore[arg-type]


def test_the_lanes_and_every_pool_kind_take_the_backend() -> None:
    """Every lane's pool and a proxy transport's pool take the backend; a transport without a
    connection pool keeps its own and says so."""
    lanes = ConnectionLanes(3)
    assert all(isinstance(lane._pool._network_backend, AsyncioNetworkBackend) for lane in lanes._lanes)
    proxied = httpx.AsyncHTTPTransport(proxy="http://127.0.0.1:9")
    assert use_asyncio_network(proxied)
    assert isinstance(proxied._pool._network_backend, AsyncioNetworkBackend)  # type: ignore[attr-defined]
    assert not use_asyncio_network(httpx.MockTransport(lambda request: httpx.Response(200)))


def test_answers_travel_on_one_kept_alive_connection() -> None:
    async def main() -> tuple[list[str], int]:
        async with local_server(serve_answers) as (origin, accepted), client() as http:
            bodies = [(await http.get(f"{origin}/{i}")).text for i in range(5)]
            return bodies, len(accepted)

    bodies, connections = asyncio.run(main())
    assert bodies == ["ok"] * 5
    assert connections == 1


def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    """The server answers once and closes without ``Connection: close``: ``is_readable`` sees the
    end of the stream, so the next request opens a new connection instead of failing."""

    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer())
        await writer.drain()
        writer.close()

    async def main() -> tuple[list[int], int]:
        async with local_server(once) as (origin, accepted), client() as http:
            statuses = []
            for _ in range(3):
                statuses.append((await http.get(origin)).status_code)
                await asyncio.sleep(0.01)  # the FIN arrives while the connection is idle
            return statuses, len(accepted)

    statuses, connections = asyncio.run(main())
    assert statuses == [200, 200, 200]
    assert connections == 3


def test_refused_timed_out_and_dropped_requests_raise_httpx_errors() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async def drops(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
        await writer.drain()
        writer.transport.abort()

    async def main() -> None:
        async with client() as http:
            with pytest.raises(httpx.ConnectError):
                await http.get("http://127.0.0.1:9/")
            async with local_server(silent) as (origin, _):
                with pytest.raises(httpx.ReadTimeout):
                    await http.get(origin, timeout=httpx.Timeout(2.0, read=0.05))
            async with local_server(drops) as (origin, _):
                with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
                    await http.get(origin)

    asyncio.run(main())


def self_signed(folder: Path, name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for ``name`` (and 127.0.0.1), and a client context
    that trusts only that certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName(name)] + ([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))] if name == "localhost" else [])
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_path, key_path)
    trusting = ssl.create_default_context(cafile=str(cert_path))
    return server, trusting


def test_tls_is_verified_and_a_certificate_for_another_name_refused(tmp_path: Path) -> None:
    good_server, good_client = self_signed(tmp_path, "localhost")
    bad_server, bad_client = self_signed(tmp_path, "elsewhere.example")

    async def main() -> None:
        async with local_server(serve_answers, tls=good_server) as (origin, _), client(verify=good_client) as http:
            response = await http.get(origin)
            assert response.text == "ok"
            assert response.extensions["network_stream"].get_extra_info("ssl_object") is not None
        async with local_server(serve_answers, tls=bad_server) as (origin, _), client(verify=bad_client) as http:
            with pytest.raises(httpx.ConnectError, match="(?i)certificate"):
                await http.get(origin)

    asyncio.run(main())


def test_a_unix_socket_connection(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")

    async def main() -> bytes:
        server = await asyncio.start_unix_server(serve_answers, path)
        try:
            async with httpcore.AsyncConnectionPool(uds=path, network_backend=AsyncioNetworkBackend()) as pool:
                response = await pool.request("GET", "http://localhost/")
                return response.content
        finally:
            server.close()

    assert asyncio.run(main()) == b"ok"


def test_socket_options_are_set_and_a_refused_one_is_a_connect_error() -> None:
    import socket

    async def keepalive_of(options: list[tuple[int, int, int]]) -> int:
        transport = httpx.AsyncHTTPTransport(socket_options=options)
        assert use_asyncio_network(transport)
        async with local_server(serve_answers) as (origin, _), httpx.AsyncClient(transport=transport) as http:
            response = await http.get(origin)
            return int(response.extensions["network_stream"].get_extra_info("socket").getsockopt(
                socket.SOL_SOCKET, socket.SO_KEEPALIVE
            ))  # fmt: skip

    assert asyncio.run(keepalive_of([(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)])) == 1
    with pytest.raises(httpx.ConnectError):
        asyncio.run(keepalive_of([(socket.SOL_SOCKET, 987654, 1)]))
