"""A document's bytes for its request, read from where the file lives.

Why here: a local file is streamed from disk as it always was (64 KiB reads, short enough to
run on the event loop). A file on an object store (a ``upath.UPath``, docs/storage.md) is read
through the storage seam (:func:`doccheck.storage.open_input`), where every block is a request
to the store (~30 ms): in the async client each read runs in a worker thread (anyio's), and the
next block is read while the previous one is on the wire, so an upload (up to 50 MB) is never
held whole and the store's latency does not stall the event loop nor the other documents. A
multipart file (up to 4 MB) may be read whole, ahead of its request (:func:`read_ahead`), so the
request's slot does not wait on the store.

The size is the one planning or the store's listing recorded (``FileDocument.size``): no HEAD
per document. A remote file that is missing is refused as a local one is (``DocumentNotFound``,
code ``file_not_found``); any other failed read, after the store library's own retries, is the
``OSError`` it raised.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar

from anyio import to_thread

from doccheck.domain import MULTIPART_MAX_BYTES
from doccheck.errors import DocumentNotFound, StorageError

if TYPE_CHECKING:
    from upath import UPath

    from doccheck.storage import UserPath

__all__ = [
    "CHUNK_SIZE", "aiter_file", "as_location", "iter_file", "read_whole", "remote_size", "shown", "spooled", "threaded"
]  # fmt: skip

#: One read of a local file (a remote one is read in the storage seam's blocks).
CHUNK_SIZE = 64 * 1024
_T = TypeVar("_T")


def as_location(path: UserPath | str | os.PathLike[str]) -> UserPath:
    """``path`` as a location: a :class:`~pathlib.Path` stays one, a ``UPath`` stays one, and text
    is resolved by the storage seam (a bare path → ``Path``, a URL → the file on its store)."""
    if isinstance(path, Path):
        return path
    from doccheck.storage import resolve

    return resolve(path)  # a UPath is returned as it is


def shown(path: UserPath) -> str:
    """How a message names ``path``: the local path, or the URL without any credential."""
    if isinstance(path, Path):
        return str(path)
    from doccheck.storage import display

    return display(path)


def not_found(path: UserPath, exc: OSError) -> DocumentNotFound:
    """The refusal of a missing file, worded as for a local one at its ``stat``."""
    return DocumentNotFound(
        f"cannot read file {shown(path)!r}: {exc.strerror or 'No such file or directory'}", code="file_not_found"
    )


def remote_size(path: UPath) -> int:
    """A remote file's size asked of its store (one HEAD): only when nobody recorded it."""
    try:
        info = path.fs.info(path.path)
    except FileNotFoundError as exc:
        raise not_found(path, exc) from None
    if info.get("type") != "file":
        raise DocumentNotFound(f"not a regular file: {shown(path)!r}", code="file_not_found")
    return int(info["size"])


def _open(path: UserPath, size: int | None) -> IO[bytes]:
    from doccheck.storage import open_input

    try:
        return open_input(path, size=size)
    except FileNotFoundError as exc:
        raise not_found(path, exc) from None


def _read(handle: IO[bytes], path: UserPath, n: int) -> bytes:
    try:
        return handle.read(n)
    except FileNotFoundError as exc:  # found missing at the first ranged read (its size was known)
        raise not_found(path, exc) from None


def read_whole(path: UserPath, size: int | None) -> bytes:
    """A file's bytes, read whole (a multipart document, up to 4 MB): a remote one in one GET,
    through the seam's :func:`~doccheck.storage.read_bounded` (obstore's for S3)."""
    if isinstance(path, Path):
        with _open(path, size) as handle:
            return _read(handle, path, -1)
    from doccheck.storage import read_bounded

    try:
        return read_bounded(path, max_bytes=max(size or 0, MULTIPART_MAX_BYTES), size=size)
    except FileNotFoundError as exc:
        raise not_found(path, exc) from None


def spooled(path: UserPath, size: int) -> bytes | None:
    """The bytes of a store's file that the run's planning kept, in memory or on the local disk (its
    spool, ``doccheck.storage.take_spooled``), once; None when there are none (read it from its store)."""
    from doccheck.storage import take_spooled

    return take_spooled(path, size)


def iter_file(path: UserPath, size: int | None = None) -> Iterator[bytes]:
    """The file's bytes in blocks: a local file in 64 KiB reads, a remote one in the seam's blocks."""
    if isinstance(path, Path):
        with path.open("rb") as fh:
            while chunk := fh.read(CHUNK_SIZE):
                yield chunk
        return
    from doccheck.storage import BLOCK_BYTES

    sent = 0
    with _open(path, size) as handle:
        while block := _read(handle, path, BLOCK_BYTES):
            sent += len(block)
            yield block
    _check_length(path, size, sent)


async def aiter_file(path: UserPath, size: int | None = None) -> AsyncIterator[bytes]:
    """As :func:`iter_file`, for the async client: a remote file's reads in worker threads, the
    next block read while the previous one is sent (two blocks held, whatever the file's size)."""
    if isinstance(path, Path):
        # Local-disk reads of 64 KiB are short enough not to need a thread per chunk.
        with path.open("rb") as fh:
            while chunk := fh.read(CHUNK_SIZE):
                yield chunk
        return
    from doccheck.storage import BLOCK_BYTES

    handle = await threaded(_open, path, size)
    ahead: asyncio.Future[bytes] | None = None
    try:
        sent = 0
        ahead = asyncio.ensure_future(threaded(_read, handle, path, BLOCK_BYTES))
        while block := await ahead:
            ahead = asyncio.ensure_future(threaded(_read, handle, path, BLOCK_BYTES))
            sent += len(block)
            yield block
        _check_length(path, size, sent)
    finally:
        try:
            if ahead is not None and not ahead.done():  # a read in its thread: let it end before the close
                await asyncio.wait([ahead])
            if ahead is not None and not ahead.cancelled():
                ahead.exception()  # retrieved: the body's consumer stopped, its error is not news
        finally:
            handle.close()


def _check_length(path: UserPath, size: int | None, sent: int) -> None:
    """A body shorter than its declared length would leave the PUT waiting: said as what it is."""
    if size is not None and sent != size:
        raise StorageError(f"{shown(path)} is {sent} bytes, not the {size} it was planned with: it changed since")


async def threaded(fn: Callable[..., _T], *args: object) -> _T:
    """``fn(*args)`` in one of anyio's worker threads (up to 40 at once, beside asyncio's
    default executor of ``min(32, cores + 4)``: six on two cores would serialise the reads)."""
    return await to_thread.run_sync(fn, *args)
