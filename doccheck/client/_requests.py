"""Request building (sans-I/O): a :class:`RequestSpec` describes one HTTP request and
:func:`build_request` turns it into an ``httpx.Request`` for a sync or an async client.

Why a spec and not an ``httpx.Request``: a request is rebuilt for every attempt, so a
streamed file is reopened from its start on a retry.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from doccheck.client._file_reads import CHUNK_SIZE as CHUNK_SIZE
from doccheck.client._file_reads import aiter_file, iter_file, read_whole, remote_size
from doccheck.client._http import AsyncLeanClient, LeanClient
from doccheck.client._retry import RetryMode

if TYPE_CHECKING:
    from doccheck.storage import UserPath

#: From the installed distribution, not ``doccheck.__version__``: importing the package root from
#: the client would put the client above everything the root exports lazily (an import circle).
USER_AGENT = f"doccheck/{importlib.metadata.version('doccheck')} httpx/{httpx.__version__}"


@dataclass
class RequestSpec:
    """Everything needed to (re)build one HTTP request; rebuilt for every attempt so that
    a streamed file is reopened from the start on a retry."""

    method: str
    path: str
    retry: RetryMode = RetryMode.SAFE
    params: dict[str, Any] | None = None
    json: Any = None
    form: dict[str, Any] | None = None
    #: The multipart file: a local path, or a remote file (``UPath``) whose bytes are read whole
    #: (``file_bytes``: already read, off the event loop; ``file_size``: its recorded size).
    file_path: UserPath | None = None
    file_field: str = "file"
    filename: str | None = None
    file_content_type: str | None = None
    file_bytes: bytes | None = None
    file_size: int | None = None
    #: The streamed body (the storage PUT): a local path or a remote file, read in blocks;
    #: ``body_size``: its recorded size (the Content-Length, with no HEAD of a remote file).
    body_path: UserPath | None = None
    body_size: int | None = None
    body_bytes: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: True for the storage PUT: absolute URL, plain client, no Authorization header.
    external: bool = False

    @property
    def what(self) -> str:
        """Method and path for logs (no query string, no host for external URLs)."""
        path = httpx.URL(self.path).path if self.external else self.path
        return f"{self.method} {path}"

    def body_length(self) -> int | None:
        if self.body_bytes is not None:
            return len(self.body_bytes)
        if self.body_path is not None and self.body_size is not None:
            return self.body_size
        if isinstance(self.body_path, Path):
            return self.body_path.stat().st_size
        if self.body_path is not None:
            return remote_size(self.body_path)
        return None


def _iter_file(path: UserPath, size: int | None = None) -> Iterator[bytes]:
    return iter_file(path, size)


def _aiter_file(path: UserPath, size: int | None = None) -> AsyncIterator[bytes]:
    return aiter_file(path, size)


def _multipart_file(spec: RequestSpec, stack: ExitStack) -> Any:
    """The multipart file's content: its bytes when read already, a local file streamed, a
    remote one read whole here (the sync client; the async one reads it in a thread first)."""
    assert spec.file_path is not None
    if spec.file_bytes is not None:
        return spec.file_bytes
    if isinstance(spec.file_path, Path):
        return stack.enter_context(spec.file_path.open("rb"))
    return read_whole(spec.file_path, spec.file_size)


def build_request(client: LeanClient | AsyncLeanClient, spec: RequestSpec, stack: ExitStack) -> httpx.Request:
    """An ``httpx.Request`` for ``spec`` on ``client``; files opened here are closed by ``stack``."""
    headers = dict(spec.headers)
    kwargs: dict[str, Any] = {"params": spec.params, "headers": headers}
    if spec.json is not None:
        kwargs["json"] = spec.json
    if spec.file_path is not None:
        content = _multipart_file(spec, stack)
        kwargs["data"] = spec.form or {}
        kwargs["files"] = {spec.file_field: (spec.filename or spec.file_path.name, content, spec.file_content_type)}
    elif spec.form is not None:
        kwargs["data"] = spec.form
    if spec.body_bytes is not None:
        kwargs["content"] = spec.body_bytes
    elif spec.body_path is not None:
        headers["Content-Length"] = str(spec.body_length())
        is_async = isinstance(client, httpx.AsyncClient)
        kwargs["content"] = (_aiter_file if is_async else _iter_file)(spec.body_path, spec.body_size)
    url = spec.path if spec.external else client.url_for(spec.path)
    return client.build_request(spec.method, url, **kwargs)
