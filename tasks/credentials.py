"""Where the flows get the service's API key.

Why a seam: today the key comes from ``DOCCHECK_API_KEY``; a deployment will later read
it from a Prefect Secret block. Flows and tasks only ever pass the *name* of where the
key lives (``block_name``), never the key itself, so it cannot end up in a flow-run
parameter, a log line, an artifact or a report.
"""

from __future__ import annotations

from pydantic import SecretStr

from doccheck.client import ConfigurationError
from doccheck.config import load_settings


def resolve_api_key(block_name: str | None = None) -> SecretStr:
    """The API key as a ``SecretStr``.

    ``block_name`` is reserved for a Prefect Secret block (not implemented yet: passing
    one raises); with None the key is read from ``DOCCHECK_API_KEY``. Raises
    :class:`~doccheck.client.ConfigurationError` when no key is configured.
    """
    if block_name:
        raise ConfigurationError(f"Secret blocks are not supported yet (asked for block {block_name!r})")
    key = load_settings().api_key
    if key is None or not key.get_secret_value().strip():
        raise ConfigurationError("no API key: set DOCCHECK_API_KEY")
    return key


def resolve_base_url(base_url: str | None = None) -> str:
    """``base_url`` or ``DOCCHECK_BASE_URL``; raises ConfigurationError when neither is set."""
    url = base_url or load_settings().base_url
    if not url:
        raise ConfigurationError("no service address: set DOCCHECK_BASE_URL or pass --base-url")
    return url


def resolve_database_url(database_url: str | None = None) -> str:
    """``database_url`` or ``DOCCHECK_DATABASE_URL`` (default ``sqlite:///doccheck.db``)."""
    return database_url or load_settings().database_url
