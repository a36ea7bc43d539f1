"""Runs the API server, the storage origin and the background loop in one event loop.

Two ``uvicorn.Server`` instances share one asyncio loop and one :class:`Emulator`. Their own
signal capture is disabled; SIGINT/SIGTERM set ``should_exit`` on both so that the process
stops cleanly, without a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

import uvicorn

from doccheck.emulator.app import create_app
from doccheck.emulator.runtime import Emulator, EmulatorConfig
from doccheck.emulator.storage import StorageOrigin


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


async def serve(config: EmulatorConfig) -> None:
    """Serve until SIGINT/SIGTERM."""
    emu = Emulator(config)
    api = _Server(uvicorn.Config(create_app(emu), host=config.host, port=config.port,
                                 log_level="warning", lifespan="off", access_log=False))  # fmt: skip
    storage = _Server(uvicorn.Config(StorageOrigin(emu), host=config.host, port=config.storage_port,
                                     log_level="warning", lifespan="off", access_log=False))  # fmt: skip
    loop = asyncio.get_running_loop()

    def stop() -> None:
        api.should_exit = True
        storage.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop)
    background = asyncio.create_task(emu.background())
    servers = asyncio.gather(api.serve(), storage.serve())
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


def run(config: EmulatorConfig) -> None:
    """Blocking entry point for the CLI."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(config))
