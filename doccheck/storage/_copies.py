"""Reading a user's file: streamed in blocks, or copied to a bounded local file where a parser needs one.

Why: a document may be up to 50 MB and a term 100,000 of them, so a remote document is never
held whole in memory: uploads read it in blocks (:func:`open_input`), and extraction, whose
worker process is handed a file path under its own limits, gets a temporary local copy capped
at the size limit and removed after (:func:`local_copy`). A local file is its own copy.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from fsspec.spec import AbstractBufferedFile

from doccheck.errors import StorageError
from doccheck.storage._locations import UserPath, display, store_errors
from doccheck.storage._object_reads import SeekableReads, copy_object, open_object, read_object
from doccheck.storage._spool import take_spooled

__all__ = ["BLOCK_BYTES", "as_storage_error", "copy_to_local", "local_copy", "open_input", "read_bounded"]

#: What one read of a remote file asks its store for (a ranged GET): memory per open file.
BLOCK_BYTES = 1024 * 1024


@contextmanager
def as_storage_error(path: UserPath) -> Iterator[None]:
    """Run the block with what a store's library raises once its retries are spent
    (:func:`~doccheck.storage.store_errors`: botocore's and aiohttp's errors are not OSErrors) as a
    :class:`StorageError` (an OSError) naming ``path`` by :func:`display` and the error's kind,
    never its text (which may carry an endpoint or a header): what a reader catches as "this file
    cannot be read". OSErrors (a file deleted since it was listed is a ``FileNotFoundError``) pass
    as they are; so does any other error (a bug is not the store's)."""
    try:
        yield
    except OSError:
        raise
    except store_errors() as exc:
        raise StorageError(f"{display(path)} cannot be read: the store failed ({type(exc).__name__})") from None


def open_input(path: UserPath, *, size: int | None = None, block_bytes: int = BLOCK_BYTES) -> IO[bytes]:
    """``path`` open for reading in binary, a remote one read ahead in :data:`BLOCK_BYTES` blocks
    (s3fs' default block is 50 MB: one open document would hold that much; an S3 object's blocks
    are ranged GETs through obstore, :func:`~._object_reads.open_object`), with a local file's
    API (``readline(limit)``, ``seek``, ``tell``). ``size``: the file's size as planning or a listing
    recorded it: a remote file then opens and reads without asking its store (s3fs sends a HEAD
    for the size at the open and, size given, still one for its details at the first read); a
    file deleted since is found missing at its first read (``FileNotFoundError``). ``block_bytes``:
    a larger block for a file read once and alone, forward with small seeks (an export's zip)."""
    if isinstance(path, Path):
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    if (ranged := open_object(path, size=size, block_bytes=block_bytes)) is not None:
        return ranged  # an S3 object: ranged GETs through obstore
    known = {} if size is None else {"size": size}
    with as_storage_error(path):
        handle = path.fs.open(path.path, "rb", block_size=block_bytes, cache_type="readahead", **known)
    if size is not None and isinstance(handle, AbstractBufferedFile) and getattr(handle, "_details", None) is None:
        handle.details = {"name": path.path, "size": size, "type": "file"}  # what s3fs' HEAD at the first read says
    # fsspec's buffered file has no ``readline(limit)`` (a hostile line without a newline would be
    # read whole) nor ``peek``: the standard buffered reader gives both, as a local file has them.
    return io.BufferedReader(_StoreReads(handle, path), buffer_size=64 * 1024)


class _StoreReads(SeekableReads):
    """A store's file object whose reads and seeks raise a :class:`StorageError` for what the
    store's library raises (:func:`store_errors`), so that a reader's ``except OSError`` holds."""

    def __init__(self, handle: Any, path: UserPath) -> None:
        super().__init__()
        self._handle = handle
        self._path = path

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        with as_storage_error(self._path):
            data = self._handle.read(len(view))  # read(), not readinto(): every store's file has it
        view[: len(data)] = data
        return len(data)

    def readall(self) -> bytes:
        """The rest in one read of the store's file (not the 8 KiB steps of RawIOBase's)."""
        with as_storage_error(self._path):
            return bytes(self._handle.read())

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        with as_storage_error(self._path):
            return int(self._handle.seek(offset, whence))

    def tell(self) -> int:
        return int(self._handle.tell())

    def close(self) -> None:
        try:
            self._handle.close()
        finally:
            super().close()


def read_bounded(path: UserPath, *, max_bytes: int, size: int | None = None) -> bytes:
    """``path``'s bytes, refused (:class:`StorageError`) past ``max_bytes``: a file read whole
    (to hash and extract it). ``size`` as :func:`open_input` takes it."""
    if size is not None and size > max_bytes:
        raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
    if not isinstance(path, Path) and (kept := take_spooled(path, size)) is not None:
        return _within(path, kept, max_bytes)  # the bytes planning read, kept for this read (._spool)
    if not isinstance(path, Path) and (whole := read_object(path, max_bytes=max_bytes, size=size)) is not None:
        return whole  # an S3 object: one GET through obstore
    with as_storage_error(path), open_input(path, size=size) as source:
        # A store's file opened with its size is that long to fsspec: one read of it all.
        remote_sized = size is not None and not isinstance(path, Path)
        data = source.read() if remote_sized else source.read(max_bytes + 1)
    return _within(path, data, max_bytes)


def _within(path: UserPath, data: bytes, max_bytes: int) -> bytes:
    if len(data) > max_bytes:
        raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
    return data


@contextmanager
def local_copy(path: UserPath, *, max_bytes: int, size: int | None = None) -> Iterator[Path]:
    """A local file with ``path``'s bytes for as long as the block runs: ``path`` itself on the
    local disk; for a remote file a temporary copy (its suffix kept), refused past ``max_bytes``
    and removed after, whatever happens. ``size``: as for :func:`open_input`."""
    if isinstance(path, Path):
        yield path
        return
    fd, name = tempfile.mkstemp(prefix="doccheck-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as out:
            if (kept := take_spooled(path, size)) is not None:  # the bytes planning read (._spool)
                out.write(_within(path, kept, max_bytes))
            elif not copy_object(path, out, max_bytes=max_bytes, block_bytes=BLOCK_BYTES):  # S3: obstore's GET
                _copy_bounded(path, out, max_bytes=max_bytes, size=size)
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


def _copy_bounded(path: UserPath, out: IO[bytes], *, max_bytes: int, size: int | None) -> None:
    with as_storage_error(path), open_input(path, size=size) as source:
        copied = 0
        while block := source.read(BLOCK_BYTES):
            copied += len(block)
            if copied > max_bytes:
                raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
            out.write(block)


def copy_to_local(path: UserPath, target: Path) -> None:
    """Download ``path`` to ``target`` (a local file), streamed."""
    with open_input(path) as source, open(target, "wb") as out:
        shutil.copyfileobj(source, out, BLOCK_BYTES)
