"""A document on S3 read whole through obstore: one GET, no HEAD, and no Python per request.

Why: a term's first run reads each of its documents from the bucket (planning hashes and counts
it; sending reads it again), tens of thousands of small GETs. Through s3fs each one is botocore's
Python (signing, hooks, parsing: ~4 ms of CPU a GET, measured) on fsspec's one event-loop thread,
which every reading thread of the run queues behind: a 2,000-document term from the tests' S3
server took 4x the local run's time (benchmarks/storage_term.py). obstore (Rust's
``object_store``) sends the same GET with the GIL released, ~1 ms of CPU, one request each (a
``pyarrow.fs.S3FileSystem`` was tried first: it sends a HEAD before every GET and does not retry
a ``503 SlowDown`` whose body is cut). Listings, writes and streamed reads stay on s3fs.

The store is configured from the same place as s3fs: the URL's fsspec options (the settings'
``DOCCHECK_STORAGE_OPTIONS`` and the block's among them) and otherwise botocore's own credential
chain (``AWS_*`` variables, ``~/.aws`` profiles, instance and workload roles), asked again every
few minutes so that rotated credentials are followed. Where the options hold something this
translation does not know, or no region is configured for AWS itself (s3fs finds a bucket's
region; object_store does not), :func:`read_object` answers None and the caller reads through
s3fs as before: the same bytes, only slower. Its retries are object_store's own (503s, 500s,
throttling, dropped connections, with exponential backoff and jitter), set as botocore's are.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from doccheck.errors import StorageError
from doccheck.storage._locations import UserPath, display

if TYPE_CHECKING:
    from obstore.store import S3Config, S3Credential

__all__ = ["copy_object", "read_object"]

#: The s3fs options this module knows how to give obstore (anything else: s3fs reads the file).
_KNOWN = frozenset({"use_listings_cache", "skip_instance_cache", "config_kwargs", "client_kwargs", "key", "secret",
                    "token", "endpoint_url", "anon"})  # fmt: skip
_KNOWN_CLIENT = frozenset({"endpoint_url", "region_name"})
_KNOWN_CONFIG = frozenset({"retries", "connect_timeout", "read_timeout", "signature_version"})  # obstore signs SigV4
#: How long obstore keeps credentials from botocore's chain before asking it again.
_CREDENTIALS_KEPT = timedelta(minutes=5)


def read_object(path: UserPath, *, max_bytes: int, size: int | None = None) -> bytes | None:
    """``path``'s bytes in one GET, refused (:class:`StorageError`) past ``max_bytes``; None when
    ``path`` is not an S3 object this module reads (the caller reads it through fsspec)."""
    found = _store_and_key(path)
    if found is None:
        return None
    if size is not None and size > max_bytes:
        raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
    with _as_read_errors(path):
        result = _obstore().get(*found)
        if int(result.meta["size"]) > max_bytes:  # known from the answer's headers: the body is not read
            raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
        return bytes(result.bytes())


def copy_object(path: UserPath, out: IO[bytes], *, max_bytes: int, block_bytes: int) -> bool:
    """Stream ``path``'s bytes into ``out`` in blocks of about ``block_bytes``, refused past
    ``max_bytes``; False (nothing written) when ``path`` is not an S3 object this module reads."""
    found = _store_and_key(path)
    if found is None:
        return False
    with _as_read_errors(path):
        result = _obstore().get(*found)
        if int(result.meta["size"]) > max_bytes:
            raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
        for block in result.stream(min_chunk_size=block_bytes):
            out.write(memoryview(block))
    return True


@contextmanager
def _as_read_errors(path: UserPath) -> Iterator[None]:
    """What obstore raises once its retries are spent, as a reader of this seam expects it: a
    missing object a ``FileNotFoundError`` naming the file, anything else a :class:`StorageError`
    naming the file and the error's kind, never its text (it holds the endpoint and the key)."""
    try:
        yield
    except StorageError:
        raise
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", display(path)) from None
    except (OSError, _obstore().exceptions.BaseError) as exc:
        raise StorageError(f"{display(path)} cannot be read: the store failed ({type(exc).__name__})") from None


def _obstore() -> Any:
    import obstore
    import obstore.exceptions  # noqa: F401 - the errors are looked up as obstore.exceptions

    return obstore


def _store_and_key(path: UserPath) -> tuple[Any, str] | None:
    if isinstance(path, Path) or getattr(path, "protocol", None) not in ("s3", "s3a") or not _available():
        return None
    bucket, _, key = str(path.path).partition("/")
    options = dict(getattr(path, "storage_options", {}) or {})
    if not bucket or not key or not _translatable(options):
        return None
    # The chain's variables are part of the key: a process whose environment changed (a test's
    # server, a rotated profile) gets a store that follows them.
    chain = tuple(os.environ.get(name, "") for name in _CHAIN_VARIABLES)
    store = _store(bucket, json.dumps(options, sort_keys=True, default=str), chain)
    return (store, key) if store is not None else None


@lru_cache(maxsize=1)
def _available() -> bool:
    try:
        _obstore()
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
                    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")  # fmt: skip


@lru_cache(maxsize=32)
def _store(bucket: str, options_json: str, chain: tuple[str, ...]) -> Any:
    """One obstore store a bucket, set of options and chain (thread-safe: every reading thread's)."""
    from obstore.store import S3Store

    options = json.loads(options_json)
    client = options.get("client_kwargs") or {}
    session = _botocore_session()
    endpoint = options.get("endpoint_url") or client.get("endpoint_url") or _configured_endpoint()
    region = client.get("region_name") or session.get_config_variable("region")
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
    else:
        provider = _BotocoreCredentials(session)
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
