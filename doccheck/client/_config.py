"""Client configuration: the base URL and API key (arguments or environment), and the
keyword arguments of the two httpx clients (the service's and the storage origin's).
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any

import httpx
from pydantic import SecretStr

from doccheck.client._auth import BearerAuth
from doccheck.client._requests import USER_AGENT
from doccheck.errors import ConfigurationError


def resolve_config(base_url: str | None, api_key: str | SecretStr | None) -> tuple[str, SecretStr]:
    """Base URL and API key from the arguments, else the ``service`` settings
    (``DOCCHECK_BASE_URL`` / ``DOCCHECK_API_KEY``).

    The base must be an http(s) URL ending in ``/api/v1`` (:func:`doccheck.config.check_base_url`,
    the rule the settings apply too): a bare host would silently hit the wrong paths.
    """
    from doccheck.config import check_base_url, load_settings

    settings = load_settings().service
    url = base_url if base_url is not None else settings.base_url
    if not url:
        raise ConfigurationError("no base URL: pass base_url or set DOCCHECK_BASE_URL (ending in /api/v1)")
    try:
        url = check_base_url(url)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    key: SecretStr | None
    if api_key is None:
        key = settings.api_key
    else:
        key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)
    if key is None or not key.get_secret_value().strip():
        raise ConfigurationError("no API key: pass api_key or set DOCCHECK_API_KEY")
    return url, key


def http_options(
    base_url: str,
    api_key: SecretStr,
    *,
    timeout: float | httpx.Timeout,
    transport: Any,
    upload_transport: Any,
    max_connections: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword arguments of the two httpx clients (sync or async alike): the service's, which
    authenticates, and the storage origin's, which must never see the API key. Redirects
    are never followed: a redirected request could carry the key to another host."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    tls = tls_context()
    service = {
        "verify": tls,
        "base_url": base_url,
        "auth": BearerAuth(api_key),
        "headers": {"User-Agent": USER_AGENT, "Accept": "application/json"},
        "timeout": timeout,
        "limits": limits,
        "transport": transport,
        "follow_redirects": False,
    }
    storage = {
        "verify": tls,
        "headers": {"User-Agent": USER_AGENT},
        "timeout": timeout,
        "limits": limits,
        "transport": upload_transport or transport,
        "follow_redirects": False,
    }
    return service, storage


def tls_context() -> ssl.SSLContext:
    """The TLS context of every client of this process: httpx's default (certifi's CA
    bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set), made once.

    Why: loading the CA bundle costs ~20 ms of CPU per context, and a client makes two
    (the service's and the storage origin's): ~40 ms for each client, i.e. each batch of a
    flow run (0.4 ms a document at 100 documents a batch; issue 10). A context is safe to
    share between connections and threads; a change of the two variables makes a new one.
    """
    return _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()
