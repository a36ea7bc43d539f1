"""Reading a user's file: streamed in blocks, or copied to a bounded local file where a parser needs one.

Why: a document may be up to 50 MB and a term 100,000 of them, so a remote document is never
held whole in memory: uploads read it in blocks (:func:`open_input`), and extraction, whose
worker process is handed a file path under its own limits, gets a temporary local copy capped
at the size limit and removed after (:func:`local_copy`). A local file is its own copy.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from doccheck.errors import StorageError
from doccheck.storage._locations import UserPath, display

__all__ = ["BLOCK_BYTES", "copy_to_local", "local_copy", "open_input"]

#: What one read of a remote file asks its store for (a ranged GET): memory per open file.
BLOCK_BYTES = 1024 * 1024


def open_input(path: UserPath) -> IO[bytes]:
    """``path`` open for reading in binary, a remote one read ahead in :data:`BLOCK_BYTES` blocks
    (s3fs' default block is 50 MB: one open document would hold that much)."""
    if isinstance(path, Path):
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    return path.fs.open(path.path, "rb", block_size=BLOCK_BYTES, cache_type="readahead")  # type: ignore[no-any-return]


@contextmanager
def local_copy(path: UserPath, *, max_bytes: int) -> Iterator[Path]:
    """A local file with ``path``'s bytes for as long as the block runs: ``path`` itself on the
    local disk; for a remote file a temporary copy (its suffix kept), refused past ``max_bytes``
    and removed after, whatever happens."""
    if isinstance(path, Path):
        yield path
        return
    fd, name = tempfile.mkstemp(prefix="doccheck-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as out, open_input(path) as source:
            copied = 0
            while block := source.read(BLOCK_BYTES):
                copied += len(block)
                if copied > max_bytes:
                    raise StorageError(f"{display(path)} is over the {max_bytes} byte limit")
                out.write(block)
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


def copy_to_local(path: UserPath, target: Path) -> None:
    """Download ``path`` to ``target`` (a local file), streamed."""
    with open_input(path) as source, open(target, "wb") as out:
        shutil.copyfileobj(source, out, BLOCK_BYTES)
