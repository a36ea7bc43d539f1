"""A location as the user wrote it (a path or a URL) turned into the one path type readers and writers take.

Why one module: every input and output of a run (the manifest, the documents its rows name, an LMS
export and its roster, the reports) may be a local path or an object-store URL (``s3://``,
``gs://``, ``az://``/``abfs://``; fsspec's ``memory://`` in unit tests), and the choice of backend,
the check that a URL carries no credential and the store's options are decided here once, through
fsspec (the way ``fsspec.core.url_to_fs``, dlt's ``bucket_url`` and Dagster's ``UPathIOManager`` do).

A bare path (or a ``file://`` URL) stays a :class:`pathlib.Path`, exactly as before: nothing changes
for a local term. A URL becomes a :class:`upath.UPath`, which has the same API (``/``, ``name``,
``open``, ``exists``...) over its fsspec filesystem. Credentials come from each store's own chain
and from the settings (:mod:`doccheck.storage._options`), never from the URL: ``s3://key:secret@b``
is refused with the secret masked.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias
from urllib.parse import unquote, urlsplit

from upath import UPath

from doccheck.errors import StorageError
from doccheck.storage._options import family_of, storage_options

__all__ = ["UserPath", "display", "file_name", "is_remote", "is_url", "resolve", "store_errors"]

#: A location of the user's: a local path, or a URL's path on its store.
UserPath: TypeAlias = Path | UPath

#: Scheme → the package that implements it and the extra that installs it.
_IMPLEMENTATIONS = {
    "s3": ("s3fs", "s3"),
    "gcs": ("gcsfs", "gcs"),
    "azure": ("adlfs", "azure"),
    "memory": ("fsspec", ""),
}
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(text: str) -> bool:
    """Whether ``text`` is written as a URL (``scheme://...``) rather than a path."""
    return bool(_URL.match(text))


def resolve(location: str | os.PathLike[str] | UserPath, *, options: Mapping[str, Any] | None = None) -> UserPath:
    """``location`` as a path readers and writers take: a :class:`~pathlib.Path` for a bare path or a
    ``file://`` URL, a :class:`~upath.UPath` over the store's filesystem for ``s3://``, ``gs://``,
    ``az://``/``abfs://`` and ``memory://``. ``options`` (fsspec storage options) go over those of the
    settings and the defaults. Raises :class:`StorageError` for an unknown scheme, a store whose
    extra is not installed, or a URL that carries a credential."""
    if isinstance(location, UPath) and not isinstance(location, Path):
        return location  # already resolved
    text = os.fspath(location)
    if not is_url(text):
        return Path(text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if parts.username is not None or parts.password is not None:
        raise StorageError(
            f"{_masked(text)}: a URL must not carry credentials; use the store's own credentials "
            "(AWS_*, GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*) or DOCCHECK_STORAGE_OPTIONS (docs/storage.md)"
        )
    if scheme in ("file", "local"):
        return Path(unquote(parts.path))
    family = family_of(scheme)
    if family is None:
        raise StorageError(
            f"{_masked(text)}: unknown scheme {scheme!r}; a location is a path or an s3://, gs://, az:// "
            "or abfs:// URL (docs/storage.md)"
        )
    module, extra = _IMPLEMENTATIONS[family]
    if importlib.util.find_spec(module) is None:
        raise StorageError(f"{text}: {scheme}:// locations need the {module} package: pip install 'doccheck[{extra}]'")
    if not parts.netloc and family != "memory":
        raise StorageError(f"{text}: a {scheme}:// location names its bucket or container ({scheme}://bucket/prefix)")
    remote: UPath = UPath(text, **storage_options(scheme, options))
    return remote


def is_remote(path: UserPath) -> bool:
    """Whether ``path`` lives on an object store (or fsspec's memory), not on the local disk: a local
    location is always a :class:`~pathlib.Path` (:func:`resolve` makes ``file://`` one)."""
    return not isinstance(path, Path)


def display(path: UserPath | str) -> str:
    """``path`` as messages, reports and the UI show it: the URL (never a credential: a URL with one
    is refused by :func:`resolve`) or the local path."""
    if isinstance(path, str):
        return _masked(path) if is_url(path) else path
    if not isinstance(path, Path):
        # What str() of a cloud UPath gives (the URL), without its chain's parsing: ~10 us a call,
        # several calls a document of a term read from a bucket.
        return f"{path.protocol}://{path.path.lstrip('/') if path.protocol == 'memory' else path.path}"
    return str(path)


def file_name(path: UserPath) -> str:
    """``path``'s last part (``path.name``): a store's from its key, without ``UPath``'s parsing
    (~10 us a call, several calls a document of a term read from a bucket)."""
    if isinstance(path, Path):
        return path.name
    return str(path.path).rstrip("/").rpartition("/")[2]


def _masked(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@``."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"***@{host}").geturl()


def store_errors() -> tuple[type[BaseException], ...]:
    """What a read or write of a store raises once its library's retries are spent: ``OSError``
    (s3fs maps most answers to it), and the transport's own errors that escape unmapped (a GET
    cut mid-body ends as aiohttp's ``ClientPayloadError``; botocore's connection errors). Catch
    these to turn one file's failure into its row's reason, never the run's. A library not yet
    imported raised nothing, so it is not imported here (a run from S3 loads neither: obstore)."""
    found: list[type[BaseException]] = [OSError, TimeoutError]
    if (aiohttp := sys.modules.get("aiohttp")) is not None:
        found.append(aiohttp.ClientError)
    if (botocore_errors := sys.modules.get("botocore.exceptions")) is not None:
        found.append(botocore_errors.BotoCoreError)
    return tuple(found)
