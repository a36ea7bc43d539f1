"""A file on S3 read through obstore: a document whole in one GET (no HEAD), a manifest or an
export streamed in ranged GETs, and no Python per request.

Why: a term's first run reads each of its documents from the bucket (planning hashes and counts
it; sending reads it again), tens of thousands of small GETs. Through s3fs each one is botocore's
Python (signing, hooks, parsing: ~4 ms of CPU a GET, measured) on fsspec's one event-loop thread,
which every reading thread of the run queues behind: a 2,000-document term from the tests' S3
server took 4x the local run's time (benchmarks/storage_term.py). obstore (Rust's
``object_store``) sends the same GET with the GIL released, ~1 ms of CPU, one request each (a
``pyarrow.fs.S3FileSystem`` was tried first: it sends a HEAD before every GET and does not retry
a ``503 SlowDown`` whose body is cut). Streamed reads (:func:`open_object`) go the same way, so
that a run from a bucket loads nothing of s3fs (:mod:`._s3_store`); writes stay on s3fs.

Where :mod:`._s3_store` has no store for a file (not S3, options it cannot translate), each
function here answers None or False and the caller reads through s3fs: the same bytes, slower.
"""

from __future__ import annotations

import errno
import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from doccheck.errors import StorageError
from doccheck.storage._locations import UserPath, display
from doccheck.storage._s3_store import obstore_module, store_and_key

__all__ = ["SeekableReads", "as_read_errors", "copy_object", "open_object", "read_object"]


def read_object(path: UserPath, *, max_bytes: int, size: int | None = None) -> bytes | None:
    """``path``'s bytes in one GET, refused (:class:`StorageError`) past ``max_bytes``; None when
    ``path`` is not an S3 object this module reads (the caller reads it through fsspec)."""
    found = store_and_key(path)
    if found is None:
        return None
    if size is not None and size > max_bytes:
        raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
    with as_read_errors(path):
        result = obstore_module().get(*found)
        if int(result.meta["size"]) > max_bytes:  # known from the answer's headers: the body is not read
            raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
        return bytes(result.bytes())


def copy_object(path: UserPath, out: IO[bytes], *, max_bytes: int, block_bytes: int) -> bool:
    """Stream ``path``'s bytes into ``out`` in blocks of about ``block_bytes``, refused past
    ``max_bytes``; False (nothing written) when ``path`` is not an S3 object this module reads."""
    found = store_and_key(path)
    if found is None:
        return False
    with as_read_errors(path):
        result = obstore_module().get(*found)
        if int(result.meta["size"]) > max_bytes:
            raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
        for block in result.stream(min_chunk_size=block_bytes):
            out.write(memoryview(block))
    return True


@contextmanager
def as_read_errors(path: UserPath) -> Iterator[None]:
    """What obstore raises once its retries are spent, as a reader of this seam expects it: a
    missing object a ``FileNotFoundError`` naming the file, anything else a :class:`StorageError`
    naming the file and the error's kind, never its text (it holds the endpoint and the key)."""
    try:
        yield
    except StorageError:
        raise
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", display(path)) from None
    except (OSError, obstore_module().exceptions.BaseError) as exc:
        raise StorageError(f"{display(path)} cannot be read: the store failed ({type(exc).__name__})") from None


def open_object(path: UserPath, *, size: int | None, block_bytes: int) -> IO[bytes] | None:
    """``path`` open for reading, each block of ``block_bytes`` one ranged GET (the memory an open
    file holds), with a local file's API (``readline(limit)``, ``peek``, ``seek``, ``tell``); None
    when ``path`` is not an S3 object this module reads. ``size``: as planning or a listing
    recorded it, or None (one HEAD asks it)."""
    found = store_and_key(path)
    if found is None:
        return None
    store, key = found
    if size is None:
        with as_read_errors(path):
            size = int(obstore_module().head(store, key)["size"])
    # 64 KiB over the block: a text reader's read1(8 KiB) bypasses an empty buffer and asks the raw
    # file directly, so the block is kept there (_RangedReads), not in the buffered reader.
    return io.BufferedReader(_RangedReads(store, key, size, path, block_bytes), buffer_size=64 * 1024)


class SeekableReads(io.RawIOBase):
    """A raw reader of a store's file that reads and seeks, as a local file does (a buffered reader
    over it gives ``readline(limit)`` and ``peek``)."""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True


class _RangedReads(SeekableReads):
    """An S3 object's bytes, a block at a time: each read outside the block held is one ranged GET
    of a block (or of what was asked, if more), object_store retrying one whose answer is cut or
    refused. Only one block is held: the memory an open file costs."""

    def __init__(self, store: Any, key: str, size: int, path: UserPath, block_bytes: int) -> None:
        super().__init__()
        self._store, self._key, self._size, self._path = store, key, size, path
        self._block_bytes = block_bytes
        self._at = 0
        self._held_at, self._held = 0, b""

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._at >= self._size or not len(view):
            return 0
        offset = self._at - self._held_at
        if not 0 <= offset < len(self._held):
            end = min(self._size, self._at + max(len(view), self._block_bytes))
            self._held, self._held_at, offset = self._get(self._at, end), self._at, 0
        got = min(len(view), len(self._held) - offset)
        view[:got] = memoryview(self._held)[offset : offset + got]
        self._at += got
        return got

    def readall(self) -> bytes:
        """The rest in one GET (not the 8 KiB steps of RawIOBase's): the caller asked for all of it."""
        if self._at >= self._size:
            return b""
        offset = self._at - self._held_at
        if 0 <= offset < len(self._held) and self._held_at + len(self._held) == self._size:
            data = self._held[offset:]  # the rest is the block held
        else:
            data = self._get(self._at, self._size)
        self._at = self._size
        return data

    def _get(self, start: int, end: int) -> bytes:
        with as_read_errors(self._path):
            return bytes(obstore_module().get_range(self._store, self._key, start=start, end=end))

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._at = base + offset
        return self._at

    def tell(self) -> int:
        return self._at
