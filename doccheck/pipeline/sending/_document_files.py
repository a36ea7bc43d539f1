"""A planned document's file: where it is, and its bytes when it is sent as its text.

Why: a document's path is a local ``Path`` or a file on an object store (a ``upath.UPath``; the
ledger and the recorded batches keep its :func:`doccheck.storage.display` text, which
:func:`doccheck.storage.resolve` turns back). The submitter hands it to the client with the size
planning recorded, so a remote file is never asked its size again (no HEAD per document), and
a file sent as its text is read through a bounded local copy off the event loop, in anyio's
worker threads (up to 40 at once: asyncio's default executor has six on two cores, which
would serialise the store's ~30 ms reads behind each other).
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doccheck.client import FileDocument
from doccheck.sources.manifest import MAX_FILE_BYTES
from doccheck.storage import display, local_copy, resolve

if TYPE_CHECKING:
    from doccheck.storage import UserPath

__all__ = ["file_document", "file_of", "put_file", "read_for_text", "recorded_size"]


def file_of(doc: Any) -> UserPath:
    """``doc``'s file as a location (its path as recorded: a ``Path``, a ``UPath``, or their text)."""
    path = doc.path
    return path if isinstance(path, Path) else resolve(path)


def recorded_size(doc: Any) -> int | None:
    """The file's size as planning recorded it (None for a document made without one)."""
    size = getattr(doc, "size_bytes", None)
    return size if isinstance(size, int) else None


def file_document(doc: Any) -> FileDocument:
    """``doc``'s file for the client, with the size planning recorded."""
    return FileDocument(file_of(doc), size=recorded_size(doc))


async def put_file(client: Any, upload: Any, path: UserPath, size: int | None) -> None:
    """PUT ``path``'s bytes to ``upload``: a remote file streamed with its recorded size (the
    PUT's Content-Length, not asked of the store); a local one as ever (``stat``'ed)."""
    if isinstance(path, Path):
        await client.put_upload(upload, path)
    else:
        await client.put_upload(upload, path, size=size)


def read_for_text(path: UserPath, size: int | None) -> bytes:
    """The bytes of a file sent as its text, for the extractor: a local file read as ever, a
    remote one through a temporary copy capped at the upload limit (removed after). A missing
    file says so in the words a local one's ``FileNotFoundError`` uses."""
    if isinstance(path, Path):
        return path.read_bytes()
    try:
        with local_copy(path, max_bytes=MAX_FILE_BYTES, size=size) as copy:
            return copy.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", display(path)) from None
