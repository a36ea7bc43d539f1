"""The fsspec storage options of a URL: the store's retry settings, then the settings', then the caller's.

Why here: credentials and endpoints are kept apart from the URL, as every tool of the ecosystem
does (Kedro's credentials entry, dlt's ``credentials``, Prefect's ``RemoteFileSystem.settings``).
Each store's own chain (``AWS_*`` including ``AWS_ENDPOINT_URL``, ``~/.aws`` profiles and roles,
``GOOGLE_APPLICATION_CREDENTIALS``, ``AZURE_STORAGE_*``) is read by its library untouched; the
settings field ``DOCCHECK_STORAGE_OPTIONS`` (a secret: never shown) adds options, for every
scheme or per scheme.

Retries come from the store's own library, not from a loop of ours: botocore's ``standard``
retry mode (it retries ``503 SlowDown``, 500s, throttling and dropped connections with
exponential backoff and jitter: 11 attempts a request, measured to ride out 20% 503s and 10%
dropped connections through the tests' fault proxy), under s3fs, which retries SlowDown answers
and cut connections once more on its own (its ``retries``, 5, is an attribute, not an option).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_OPTIONS", "family_of", "storage_options"]

_FAMILIES = {
    "s3": "s3", "s3a": "s3",
    "gs": "gcs", "gcs": "gcs",
    "az": "azure", "abfs": "azure", "abfss": "azure", "adl": "azure",
    "memory": "memory",
}  # fmt: skip

#: Each store's defaults: retries and timeouts of its own library; no listing cache (a rerun in the
#: same process must see what changed; doccheck lists a prefix once per run itself).
DEFAULT_OPTIONS: Mapping[str, Mapping[str, Any]] = {
    "s3": {
        "use_listings_cache": False,
        "config_kwargs": {
            "retries": {"max_attempts": 10, "mode": "standard"},
            "connect_timeout": 10,
            "read_timeout": 60,
            # Requests are signed with SigV4 anyway; said here, a presigned link is too (botocore
            # presigns SigV2 for us-east-1 otherwise, which S3 refuses for buckets made since 2020).
            "signature_version": "s3v4",
        },
    },
    "gcs": {"use_listings_cache": False},
    "azure": {"use_listings_cache": False},
    "memory": {},
}


def family_of(scheme: str) -> str | None:
    """The store a URL scheme names (``"s3"`` for ``s3``/``s3a``), None for one we do not read."""
    return _FAMILIES.get(scheme.lower())


def storage_options(scheme: str, explicit: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The options for a ``scheme://`` URL: the store's defaults, under the settings' (flat, or the
    entry named by the scheme or its store), under ``explicit``."""
    family = family_of(scheme) or scheme
    merged: dict[str, Any] = copy.deepcopy(dict(DEFAULT_OPTIONS.get(family, {})))
    _merge(merged, _from_settings(scheme, family))
    _merge(merged, dict(explicit or {}))
    return merged


def _from_settings(scheme: str, family: str) -> dict[str, Any]:
    from doccheck.config import parse_storage_options, setting

    secret = setting("storage", "options")
    if secret is None:
        return {}
    value = parse_storage_options(secret.get_secret_value())
    per_scheme = {k: v for k, v in value.items() if k in _FAMILIES and isinstance(v, dict)}
    flat = {k: v for k, v in value.items() if k not in _FAMILIES}
    return {**flat, **per_scheme.get(family, {}), **per_scheme.get(scheme, {})}


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Deep-merge ``extra`` into ``into`` (nested dicts such as ``config_kwargs`` are merged)."""
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
