"""Where the flows get the service's API key: the integration's half of the settings' seam.

Why a seam: the key comes from a ``DocCheckCredentials`` block, a Prefect ``Secret`` block
(a deployment's natural home for credentials) or ``DOCCHECK_API_KEY``: a block's value is
handed to :func:`doccheck.config.load_settings` as its ``block`` layer, so the order is the
settings' own (flag, block, environment, file). Flow parameters
only ever hold a block's *name*; tasks get that name or the loaded block (whose key is a
``SecretStr``, shown masked and never serialised), never the key as text, so it cannot end
up in a flow-run parameter, a log line, an artifact or a report.
"""

from __future__ import annotations

from typing import Any, TypeAlias, cast

from pydantic import SecretStr

from doccheck.client import ConfigurationError
from doccheck.config import load_settings
from prefect_doccheck.credentials import DocCheckCredentials

#: Where a task finds the key: a ``DocCheckCredentials`` block, the name of a Prefect
#: ``Secret`` block holding the key, or None for ``DOCCHECK_API_KEY``.
KeySource: TypeAlias = DocCheckCredentials | str | None


async def resolve_credentials(
    credentials: DocCheckCredentials | str | None, api_key_block: str | None = None
) -> KeySource:
    """What the flows hand their tasks: the ``credentials`` block (loaded when given by
    name), else the ``api_key_block`` Secret name, else None (the environment).

    Neither parameter given: the blocks the settings name (``DOCCHECK_CREDENTIALS_BLOCK``,
    ``DOCCHECK_API_KEY_BLOCK``), as a container work pool's job variables set them.
    The error for a missing block names it, never a value.
    """
    if isinstance(credentials, DocCheckCredentials):
        return credentials
    if not credentials and not api_key_block:
        service = load_settings().service
        credentials, api_key_block = service.credentials_block, service.api_key_block
    if credentials:
        try:
            return await DocCheckCredentials.aload(credentials)
        except ValueError:
            raise ConfigurationError(f"no DocCheckCredentials block named {credentials!r}") from None
    return api_key_block or None


def base_url_of(source: KeySource) -> str | None:
    """The service address a ``DocCheckCredentials`` block carries (None for the others)."""
    return source.base_url if isinstance(source, DocCheckCredentials) else None


def resolve_api_key(block_name: KeySource = None) -> SecretStr:
    """The API key as a ``SecretStr``, through the settings' one order (a block over the
    environment over the file, :func:`doccheck.config.load_settings`).

    With a ``DocCheckCredentials`` block the key is its ``api_key``; with a name the key is
    the value of that Prefect ``Secret`` block; with None the settings' ``DOCCHECK_API_KEY``.
    Raises :class:`~doccheck.client.ConfigurationError` when no key is configured.
    """
    if isinstance(block_name, DocCheckCredentials):
        block = {"api_key": block_name.api_key}
    else:
        block = {"api_key": load_secret_block(block_name, what="API key")} if block_name else {}
    key = load_settings(block=block).service.api_key
    if key is None or not key.get_secret_value().strip():
        raise ConfigurationError("no API key: set DOCCHECK_API_KEY")
    return key


def load_secret_block(block_name: str, *, what: str = "secret") -> SecretStr:
    """The value of the Prefect ``Secret`` block ``block_name``, as a ``SecretStr``.

    Loaded synchronously (``_sync=True``) so that it works the same from sync and async
    callers. The error names the block, never its value.
    """
    from prefect.blocks.system import Secret

    try:
        # `_sync=True`: Prefect's sync/async dispatch; typed as "block or coroutine".
        block = cast("Secret[Any]", Secret.load(block_name, _sync=True))  # type: ignore[call-arg]
    except ValueError:
        raise ConfigurationError(f"no Prefect Secret block named {block_name!r} (for the {what})") from None
    value = block.get()
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(
            f"the Prefect Secret block {block_name!r} holds no {what} (an empty or non-text value)"
        )
    return SecretStr(value.strip())


def resolve_base_url(base_url: str | None = None) -> str:
    """``base_url`` or ``DOCCHECK_BASE_URL`` (the settings' order); raises ConfigurationError when neither is set."""
    url = load_settings(base_url=base_url or None).service.base_url
    if not url:
        raise ConfigurationError("no service address: set DOCCHECK_BASE_URL or pass --base-url")
    return url


def resolve_database_url(database_url: str | None = None) -> str:
    """``database_url`` or ``DOCCHECK_DATABASE_URL`` (default ``sqlite:///doccheck.db``)."""
    return load_settings(database_url=database_url or None).ledger.database_url
