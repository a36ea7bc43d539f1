"""One way to open what a run needs: the ledger and the service's client, from the settings.

Why one: the command (``doccheck run``, ``collect`` in this process), the notebook and the
flow's tasks each built their own ledger and client, so a new client option or a new
source of the key had to be wired into four places. :func:`service_client` is the one
constructor of a run's client (a connection for each request in flight); :func:`open_service`
opens the ledger named by the settings and that client (:func:`ledger_for`: the ledger the
flow's tasks share, one per database URL), checks the address and the key
with one free request when asked, and closes both on the way out. The key comes in as a
:class:`~pydantic.SecretStr` from :func:`doccheck.config.load_settings` or from the caller
(a notebook argument, a Prefect block read by the integration); it is never logged.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic import SecretStr

from doccheck.client import AsyncDocCheckClient, ConfigurationError, lanes_for
from doccheck.config import Settings
from doccheck.ledger import Ledger

__all__ = ["close_ledgers", "ledger_for", "open_service", "service_client"]

_ledgers: dict[str, Ledger] = {}
_ledgers_lock = threading.Lock()


def ledger_for(database_url: str) -> Ledger:
    """One :class:`Ledger` (one connection pool) per database URL in this process: what the
    flow's tasks share (each task opens its own client; a pool cannot travel between tasks)."""
    with _ledgers_lock:
        ledger = _ledgers.get(database_url)
        if ledger is None:
            ledger = _ledgers[database_url] = Ledger(database_url)
        return ledger


def close_ledgers() -> None:
    """Dispose of every shared ledger's pool (end of a CLI command or a test)."""
    with _ledgers_lock:
        for ledger in _ledgers.values():
            ledger.close()
        _ledgers.clear()


def service_client(
    base_url: str,
    api_key: SecretStr | str,
    *,
    concurrency: int = 0,
    timeout: Any = None,
    transport: Any = None,
    upload_transport: Any = None,
) -> AsyncDocCheckClient:
    """The run's client: ``concurrency`` connections (``lanes_for``), the block's timeouts when
    given (``timeout``), transports as :class:`AsyncDocCheckClient` takes them (tests)."""
    options: dict[str, Any] = {"max_connections": lanes_for(concurrency), "transport": transport,
                               "upload_transport": upload_transport}  # fmt: skip
    if timeout is not None:
        options["timeout"] = timeout
    return AsyncDocCheckClient(base_url, api_key, **options)


@asynccontextmanager
async def open_service(
    settings: Settings, *, concurrency: int, api_key: SecretStr | None = None, check_access: bool = True
) -> AsyncIterator[tuple[Ledger, AsyncDocCheckClient]]:
    """The ledger of ``settings.ledger`` and a client of ``settings.service`` (``api_key`` wins
    over the settings' key), both closed on the way out. ``check_access``: one free request
    first, so a wrong address or key fails before anything is recorded."""
    from doccheck.pipeline.collecting._waiting import verify_access

    key = api_key or settings.service.api_key
    if not settings.service.base_url or key is None or not key.get_secret_value().strip():
        raise ConfigurationError("no service address or API key: set DOCCHECK_BASE_URL and DOCCHECK_API_KEY")
    ledger = Ledger(settings.ledger.database_url)
    try:
        async with service_client(settings.service.base_url, key, concurrency=concurrency) as client:
            if check_access:
                await verify_access(client)
            yield ledger, client
    finally:
        ledger.close()
