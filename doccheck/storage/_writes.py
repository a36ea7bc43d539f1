"""Writing a user's outputs: whole objects, never half of one, and a folder's marker last.

Why: a reader (the catalog, ``latest``, another tool) must never see half a report. On the local
disk a file is written beside its target and renamed over it (one ``rename(2)``); on a store an
object appears whole when its PUT (or its multipart upload) completes, so a file is written to a
local temporary file first and put in one piece: a process killed mid-write leaves the old object,
or none. A folder of many objects cannot appear at once on a store: :func:`upload_tree` puts its
marker (``run.json``) last, and readers count a folder only once its marker is there.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from doccheck.storage._locations import UserPath

__all__ = ["arrow_filesystem", "open_output", "remove_tree", "upload_tree", "write_bytes"]


def write_bytes(path: UserPath, data: bytes) -> None:
    """``path`` holds ``data`` afterwards, whole; until then it holds what it held (or nothing)."""
    with open_output(path) as out:
        out.write(data)


@contextmanager
def open_output(path: UserPath) -> Iterator[IO[bytes]]:
    """A binary file to write ``path``'s new content into; published whole when the block ends
    without an exception, discarded otherwise."""
    local_dir = path.parent if isinstance(path, Path) else None
    if local_dir is not None:
        local_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".doccheck-", suffix=".tmp", dir=local_dir)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
        if isinstance(path, Path):
            os.replace(name, path)
        else:
            path.fs.put_file(name, path.path)
    finally:
        Path(name).unlink(missing_ok=True)


def upload_tree(source: Path, target: UserPath, *, last: Sequence[str] = ()) -> int:
    """Put every file under the local folder ``source`` at the same relative name under ``target``,
    the names in ``last`` (relative, e.g. ``"run.json"``) after all others, in that order. Each object
    is put whole (:func:`open_output`'s rule). How many files were put."""
    files = sorted(p for p in source.rglob("*") if p.is_file())
    rel = [p.relative_to(source).as_posix() for p in files]
    order = [r for r in rel if r not in last] + [r for r in last if r in rel]
    for name in order:
        destination = target / name
        if not isinstance(destination, Path):
            destination.fs.put_file(str(source / name), destination.path)
        else:
            with open(source / name, "rb") as data, open_output(destination) as out:
                while block := data.read(1024 * 1024):
                    out.write(block)
    return len(order)


def remove_tree(path: UserPath) -> bool:
    """Remove the folder or prefix ``path`` and everything under it; whether there was anything."""
    if isinstance(path, Path):
        import shutil

        if not path.exists():
            return False
        shutil.rmtree(path) if path.is_dir() else path.unlink()
        return True
    if not path.fs.exists(path.path):
        return False
    path.fs.rm(path.path, recursive=True)
    return True


def arrow_filesystem(path: UserPath) -> tuple[Any, str]:
    """A ``pyarrow.fs.FileSystem`` and the path on it, for pyarrow's readers and writers: Arrow's
    own local filesystem on the disk, the fsspec filesystem wrapped for Arrow on a store."""
    import pyarrow.fs as pafs

    if isinstance(path, Path):
        return pafs.LocalFileSystem(), os.fspath(path)
    return pafs.PyFileSystem(pafs.FSSpecHandler(path.fs)), path.path
