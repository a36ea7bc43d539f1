"""The parsers of settings' values: lists, rotated secrets, the service's base URL, storage options.

Why apart from :mod:`doccheck.config`: they are plain functions of one value, shared by the
settings model's validators and by the callers that read the same shapes elsewhere (a Prefect
block's values, a flag), and the model's module is long enough with the model itself. Imported
and re-exported by :mod:`doccheck.config`, their one public home.
"""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

__all__ = ["API_VERSION_SUFFIX", "check_base_url", "parse_storage_options", "split_list", "split_secrets"]

#: Every path of the service's interface is relative to a base ending in this.
API_VERSION_SUFFIX = "/api/v1"


def split_list(value: object) -> list[str]:
    """``"a, b"`` → ``["a", "b"]``: the one comma-splitter of settings (lists, rotated secrets)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list | tuple):
        return [str(part).strip() for part in value if str(part).strip()]
    raise TypeError("expected a comma-separated list")


def split_secrets(value: str | SecretStr | None) -> list[SecretStr]:
    """Rotated secrets written as one value (``"new,old"``, from a variable or a block) → a
    list, newest first, empty entries dropped. The one splitter of every secret source."""
    if value is None:
        return []
    raw = value.get_secret_value() if isinstance(value, SecretStr) else value
    return [SecretStr(part) for part in split_list(raw)]


def parse_storage_options(raw: str) -> dict[str, Any]:
    """``DOCCHECK_STORAGE_OPTIONS``' JSON object (fsspec storage options, flat or per scheme); a
    ``ValueError`` that never repeats the value (it holds credentials)."""
    import json

    try:
        value = json.loads(raw)
    except ValueError:
        raise ValueError("expected a JSON object of fsspec storage options") from None
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object of fsspec storage options")
    return value


def check_base_url(url: str) -> str:
    """The service base without a trailing slash; a ``ValueError`` unless it is an http(s)
    URL ending in ``/api/v1`` (every path of the interface is relative to it: a bare host
    would silently hit the wrong paths)."""
    from urllib.parse import urlsplit

    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base URL must be an http(s) URL ending in {API_VERSION_SUFFIX}, got {url!r}")
    if not parts.path.endswith(API_VERSION_SUFFIX) or parts.query:
        raise ValueError(
            f"base URL must end in {API_VERSION_SUFFIX} (the interface version is in the path), got {url!r}"
        )
    return url
