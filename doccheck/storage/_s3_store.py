"""The obstore store (Rust's ``object_store``) for an S3 location, configured as s3fs would be.

Why: the requests a run makes of a bucket (the manifest's HEAD and reads, the prefix's listing,
a GET per document) go through obstore: no Python per request, the GIL released, and nothing of
s3fs, aiobotocore, botocore or aiohttp loaded unless a request needs them (:mod:`._object_reads`
says which): ~40 MB of a run's memory (a 500-document run from a bucket: 271 → 229 MB).

The store is configured from the same place as s3fs: the URL's fsspec options (the settings'
``DOCCHECK_STORAGE_OPTIONS`` and the block's among them) and otherwise the AWS tools' standard
chain. The ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` variables, the chain's first link, and
``AWS_DEFAULT_REGION`` are read as botocore reads them; anything further down the chain (``~/.aws``
profiles, instance and workload roles, a region from the config file) is asked of botocore itself,
again every few minutes so that rotated credentials are followed. Where the options hold something
this translation does not know, or no region is configured for AWS itself (s3fs finds a bucket's
region; object_store does not), :func:`store_and_key` answers None and the caller goes through s3fs
as before: the same bytes, only slower. Retries are object_store's own (503s, 500s, throttling,
dropped connections, with exponential backoff and jitter), set as botocore's are.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doccheck.storage._locations import UserPath

if TYPE_CHECKING:
    from obstore.store import S3Config, S3Credential

__all__ = ["obstore_module", "store_and_key"]

#: The s3fs options this module knows how to give obstore (anything else: s3fs reads the file).
_KNOWN = frozenset({"use_listings_cache", "skip_instance_cache", "config_kwargs", "client_kwargs", "key", "secret",
                    "token", "endpoint_url", "anon"})  # fmt: skip
_KNOWN_CLIENT = frozenset({"endpoint_url", "region_name"})
_KNOWN_CONFIG = frozenset({"retries", "connect_timeout", "read_timeout", "signature_version"})  # obstore signs SigV4
#: How long obstore keeps credentials from botocore's chain before asking it again.
_CREDENTIALS_KEPT = timedelta(minutes=5)


def obstore_module() -> Any:
    """``obstore`` with its errors (``obstore.exceptions``), imported on first use."""
    import obstore
    import obstore.exceptions  # noqa: F401 - the errors are looked up as obstore.exceptions

    return obstore


def store_and_key(path: UserPath, *, prefix: bool = False) -> tuple[Any, str] | None:
    """The obstore store for ``path``'s bucket and ``path``'s key in it; None when ``path`` is not
    on S3 or its options are not translatable (the caller goes through s3fs). ``prefix``: ``path``
    is a prefix to list, which may be the bucket itself (an empty key)."""
    if isinstance(path, Path) or getattr(path, "protocol", None) not in ("s3", "s3a") or not _available():
        return None
    bucket, _, key = str(path.path).partition("/")
    options = dict(getattr(path, "storage_options", {}) or {})
    if not bucket or (not key and not prefix) or not _translatable(options):
        return None
    # The chain's variables are part of the key: a process whose environment changed (a test's
    # server, a rotated profile) gets a store that follows them.
    chain = tuple(os.environ.get(name, "") for name in _CHAIN_VARIABLES)
    store = _store(bucket, json.dumps(options, sort_keys=True, default=str), chain)
    return (store, key) if store is not None else None


@lru_cache(maxsize=1)
def _available() -> bool:
    try:
        obstore_module()
    except ImportError:
        return False
    return True


def _translatable(options: Mapping[str, Any]) -> bool:
    client = options.get("client_kwargs") or {}
    config = options.get("config_kwargs") or {}
    return (
        set(options) <= _KNOWN
        and isinstance(client, Mapping)
        and set(client) <= _KNOWN_CLIENT
        and isinstance(config, Mapping)
        and set(config) <= _KNOWN_CONFIG
        and config.get("signature_version", "s3v4") == "s3v4"  # obstore signs with SigV4 only
    )


#: The AWS tools' standard variables a store depends on (botocore reads them, and the profile's files).
_CHAIN_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE",
                    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE",
                    "AWS_SHARED_CREDENTIALS_FILE")  # fmt: skip


@lru_cache(maxsize=32)
def _store(bucket: str, options_json: str, chain: tuple[str, ...]) -> Any:
    """One obstore store a bucket, set of options and chain (thread-safe: every reading thread's)."""
    from obstore.store import S3Store

    options = json.loads(options_json)
    client = options.get("client_kwargs") or {}
    endpoint = options.get("endpoint_url") or client.get("endpoint_url") or _configured_endpoint()
    region = client.get("region_name") or os.environ.get("AWS_DEFAULT_REGION") or _chain_region()
    if not region and not endpoint:
        return None  # AWS itself, region unknown: s3fs asks the bucket for it
    config: S3Config = {"region": region or "us-east-1"}
    if endpoint:
        config["endpoint"] = str(endpoint)
    provider = None
    if options.get("anon"):
        config["skip_signature"] = True
    elif options.get("key") and options.get("secret"):
        config["access_key_id"], config["secret_access_key"] = options["key"], options["secret"]
        if options.get("token"):
            config["session_token"] = options["token"]
    elif os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
        # The chain's first link, as botocore's environment provider reads it: no botocore loaded.
        config["access_key_id"] = os.environ["AWS_ACCESS_KEY_ID"]
        config["secret_access_key"] = os.environ["AWS_SECRET_ACCESS_KEY"]
        if os.environ.get("AWS_SESSION_TOKEN"):
            config["session_token"] = os.environ["AWS_SESSION_TOKEN"]
    else:
        provider = _BotocoreCredentials(_botocore_session())
    timeouts = options.get("config_kwargs") or {}
    return S3Store(
        bucket,
        config=config,
        credential_provider=provider,
        client_options={
            "allow_http": str(endpoint or "").startswith("http://"),
            "connect_timeout": f"{int(timeouts.get('connect_timeout', 10))}s",
            "timeout": f"{int(timeouts.get('read_timeout', 60))}s",
        },
        retry_config={"max_retries": _retries(timeouts), "retry_timeout": timedelta(minutes=3)},
    )


def _retries(config: Mapping[str, Any]) -> int:
    """botocore's attempts (``config_kwargs.retries.max_attempts``, 10 by default) as retries."""
    retries = config.get("retries") or {}
    attempts = retries.get("max_attempts", 10) if isinstance(retries, Mapping) else 10
    return max(0, int(attempts))


def _configured_endpoint() -> str | None:
    """The S3 endpoint the AWS tools' standard variables name (MinIO, Ceph, R2, a test server)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def _chain_region() -> str | None:
    """The region botocore finds beyond ``AWS_DEFAULT_REGION`` (a profile's config file)."""
    region = _botocore_session().get_config_variable("region")
    return str(region) if region else None


def _botocore_session() -> Any:
    import botocore.session

    return botocore.session.get_session()


class _BotocoreCredentials:
    """obstore's credential provider over botocore's chain (what s3fs itself would use): asked
    again every few minutes, botocore refreshing a role's credentials as they near their expiry."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._lock = threading.Lock()

    def __call__(self) -> S3Credential:
        with self._lock:
            found = self._session.get_credentials()
            frozen = found.get_frozen_credentials() if found is not None else None
        if frozen is None or not frozen.access_key:
            raise PermissionError("no AWS credentials were found in the standard chain")
        return {
            "access_key_id": frozen.access_key,
            "secret_access_key": frozen.secret_key,
            "token": frozen.token,
            "expires_at": datetime.now(UTC) + _CREDENTIALS_KEPT,
        }
