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
from typing import Any

import httpx

from doccheck.client._http import AsyncLeanClient, LeanClient
from doccheck.client._retry import RetryMode

#: From the installed distribution, not ``doccheck.__version__``: importing the package root from
#: the client would put the client above everything the root exports lazily (an import circle).
USER_AGENT = f"doccheck/{importlib.metadata.version('doccheck')} httpx/{httpx.__version__}"
CHUNK_SIZE = 64 * 1024


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
    file_path: Path | None = None
    file_field: str = "file"
    filename: str | None = None
    file_content_type: str | None = None
    body_path: Path | None = None
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
        if self.body_path is not None:
            return self.body_path.stat().st_size
        return None


def _iter_file(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK_SIZE):
            yield chunk


async def _aiter_file(path: Path) -> AsyncIterator[bytes]:
    # Local-disk reads of 64 KiB are short enough not to need a thread per chunk.
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK_SIZE):
            yield chunk


def build_request(client: LeanClient | AsyncLeanClient, spec: RequestSpec, stack: ExitStack) -> httpx.Request:
    """An ``httpx.Request`` for ``spec`` on ``client``; files opened here are closed by ``stack``."""
    headers = dict(spec.headers)
    kwargs: dict[str, Any] = {"params": spec.params, "headers": headers}
    if spec.json is not None:
        kwargs["json"] = spec.json
    if spec.file_path is not None:
        fh = stack.enter_context(spec.file_path.open("rb"))
        kwargs["data"] = spec.form or {}
        kwargs["files"] = {spec.file_field: (spec.filename or spec.file_path.name, fh, spec.file_content_type)}
    elif spec.form is not None:
        kwargs["data"] = spec.form
    if spec.body_bytes is not None:
        kwargs["content"] = spec.body_bytes
    elif spec.body_path is not None:
        headers["Content-Length"] = str(spec.body_length())
        is_async = isinstance(client, httpx.AsyncClient)
        kwargs["content"] = _aiter_file(spec.body_path) if is_async else _iter_file(spec.body_path)
    url = spec.path if spec.external else client.url_for(spec.path)
    return client.build_request(spec.method, url, **kwargs)
