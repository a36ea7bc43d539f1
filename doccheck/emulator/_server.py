"""Runs the API server, the storage origin and the background loop in one event loop.

Two ``uvicorn.Server`` instances share one asyncio loop and one :class:`Emulator`. Their own
signal capture is disabled; SIGINT/SIGTERM set ``should_exit`` on both so that the process
stops cleanly, without a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from collections.abc import Iterator

import uvicorn

from doccheck.emulator._emulator_app import create_app
from doccheck.emulator._runtime import Emulator, EmulatorConfig
from doccheck.emulator._storage_origin import StorageOrigin
from doccheck.extract import shutdown_workers
from doccheck.guards import BodyDeadline, deadline_protocol


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # signals are handled by serve()
        yield


def banner(config: EmulatorConfig) -> str:
    """What ``doccheck emulator`` prints on start (the keys are sandbox keys, by design)."""
    lines = [
        f"doccheck emulator: base URL {config.base_url}",
        f"storage origin: {config.storage_url}",
        f"OpenAPI: {config.base_url}/openapi.json",
        "accepted API keys: " + ", ".join(config.api_keys),
        f"private webhooks allowed: {'yes' if config.allow_private_webhooks else 'no'}; "
        f"offline: {'yes' if config.offline else 'no'}; seed: {config.seed}",
    ]
    return "\n".join(lines)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, bound before any server starts so that a busy port is one clear line.

    ``IPPROTO_TCP`` explicitly: asyncio sets TCP_NODELAY only on sockets whose ``proto`` says
    TCP, and without it a response written in two pieces (head, then body) waits ~40 ms for
    the client's delayed ACK on every kept-alive request."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


async def serve(
    config: EmulatorConfig, sockets: tuple[socket.socket, socket.socket] | None = None, profile: str = "default"
) -> None:
    """Serve until SIGINT/SIGTERM (on ``sockets`` if given, else binding host:port and storage port),
    answering as the variant ``profile`` (:mod:`doccheck.emulator._variants`)."""
    api_sock, storage_sock = sockets or (bind(config.host, config.port), bind(config.host, config.storage_port))
    emu = Emulator(config)
    protocol = deadline_protocol(config.header_timeout_s)  # slow clients are cut off, see slow_clients

    def bounded(app: object) -> BodyDeadline:
        return BodyDeadline(app, body_timeout=config.body_timeout_s, idle_timeout=config.idle_timeout_s)

    api = _Server(uvicorn.Config(bounded(create_app(emu, profile)), host=config.host, port=config.port, http=protocol,
                                 log_level="warning", lifespan="off", access_log=False))  # fmt: skip
    storage = _Server(uvicorn.Config(bounded(StorageOrigin(emu)), host=config.host, port=config.storage_port,
                                     http=protocol, log_level="warning", lifespan="off", access_log=False))  # fmt: skip
    loop = asyncio.get_running_loop()

    def stop() -> None:
        api.should_exit = True
        storage.should_exit = True
        shutdown_workers()  # in-flight extractions end now (503), not at their time limit

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop)
    background = asyncio.create_task(emu.background())
    servers = asyncio.gather(api.serve(sockets=[api_sock]), storage.serve(sockets=[storage_sock]))
    watcher = asyncio.create_task(_announce_when_started(config, api, storage))
    try:
        await servers
    finally:
        for task in (background, watcher):
            task.cancel()
        await asyncio.gather(background, watcher, return_exceptions=True)
        await emu.dispatcher.aclose()


async def _announce_when_started(config: EmulatorConfig, *servers: uvicorn.Server) -> None:
    while not all(s.started for s in servers):
        await asyncio.sleep(0.02)
    print(banner(config), flush=True)


def run(config: EmulatorConfig, profile: str = "default") -> None:
    """Blocking entry point for the CLI; a busy port exits 2 with one line, no traceback."""
    try:
        sockets = (bind(config.host, config.port), bind(config.host, config.storage_port))
    except OSError as exc:
        print(f"doccheck emulator: cannot listen on {config.host} ports {config.port}/{config.storage_port}: "
              f"{exc.strerror or exc}", file=sys.stderr)  # fmt: skip
        raise SystemExit(2) from None
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(config, sockets, profile))
