"""The bytes planning read from a store, kept (in memory or on the local disk) until the document is sent.

Why: a term's first run from a bucket read each document twice: once when planned (its hash and
word count; planning read every file of the manifest before the first batch was sent, many at a
time) and once when sent, 20,000 GETs for 10,000 documents at ~30 ms each (issue 48's benchmark).
Planning could not hand the bytes on in memory then (a term's are hundreds of megabytes, and were
read long before they were sent), so what it read is written to a temporary folder of the run's, capped in bytes
(:data:`SPOOL_BYTES`), and the first read of that file afterwards takes it from there and removes
it. Past the cap nothing more is kept and the file is read from its store again, as before.

The spool is the content that was planned: a document sent from it is sent with the bytes its
Idempotency-Key was computed from, even if its object changed in the store since (an object
changed between plan and send is never sent under the old content's key with the new bytes).
Its files are named by a counter, never by the student's file name; the folder is the owner's
alone (``mkdtemp``) and is removed when the run's :func:`spooling` block ends, whatever happened,
with whatever was not sent. Only a file read whole (up to the multipart limit) is kept; the size
limits of the readers apply to a spooled file as to one read from its store.

A small file (an essay: :data:`MEMORY_FILE_BYTES` or less) is kept in memory instead, up to
:data:`MEMORY_BYTES` for all of them: what a run holds at once is bounded by its read-ahead and its
sender's queue (~1,450 files during a 100,000-document term, ~6 MB), and a file written, opened,
read and removed again cost ~0.1 ms a document, half of it on the event loop that sends the checks.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from doccheck.storage._locations import UserPath, display

__all__ = ["MEMORY_BYTES", "MEMORY_FILE_BYTES", "SPOOL_BYTES", "Spool", "spool", "spooling", "take_spooled"]

#: Most bytes a run keeps on the local disk for its documents not yet sent (~100,000 essays).
SPOOL_BYTES = 256 * 1024 * 1024
#: A file this small is kept in memory (while :data:`MEMORY_BYTES` allow), not on the disk.
MEMORY_FILE_BYTES = 64 * 1024
#: Most bytes a run keeps in memory for its small documents not yet sent.
MEMORY_BYTES = 32 * 1024 * 1024


@dataclass
class Spool:
    """One run's spool: a folder, what it holds (location -> file, size; small files' bytes in
    memory) and how many bytes on the disk (``used``) and in memory (``held``)."""

    folder: Path
    max_bytes: int
    memory_bytes: int = MEMORY_BYTES
    used: int = 0
    held: int = 0
    kept: int = 0  # files ever kept
    taken: int = 0  # files read back
    full: int = 0  # files not kept: the cap was reached
    _files: dict[str, tuple[Path, int]] = field(default_factory=dict)
    _memory: dict[str, bytes] = field(default_factory=dict)
    _names: Iterator[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def keep(self, path: UserPath, data: bytes) -> bool:
        """Keep ``data`` as ``path``'s planned bytes; False when there is no room (nothing kept)."""
        where = display(path)
        with self._lock:
            if where in self._memory:
                return False
            if (
                len(data) <= MEMORY_FILE_BYTES
                and self.held + len(data) <= self.memory_bytes
                and where not in self._files
            ):
                self._memory[where] = data
                self.held += len(data)
                self.kept += 1
                return True
            if where in self._files or self.used + len(data) > self.max_bytes:
                self.full += where not in self._files
                return False
            self.used += len(data)
            target = self.folder / f"{next(self._names):08d}"
            self._files[where] = (target, len(data))
        try:
            target.write_bytes(data)
        except OSError:  # the disk is full, say: the file is read from its store when sent
            self._forget(where)
            return False
        with self._lock:
            self.kept += 1
        return True

    def take(self, path: UserPath, size: int | None) -> bytes | None:
        """``path``'s planned bytes, once (the entry is removed); None when not kept, or kept with
        another size than ``size`` (the size the caller was told: its reading is not this one)."""
        where = display(path)
        with self._lock:
            if (data := self._memory.pop(where, None)) is not None:
                self.held -= len(data)
                if size is None or size == len(data):
                    self.taken += 1
                    return data
                return None
            found = self._files.get(where)
        if found is None:
            return None
        target, length = found
        try:
            data = target.read_bytes() if size is None or size == length else None
        except OSError:
            data = None
        self._forget(where)
        if data is not None and len(data) == length:
            with self._lock:
                self.taken += 1
            return data
        return None

    def _forget(self, where: str) -> None:
        with self._lock:
            found = self._files.pop(where, None)
            if found is not None:
                self.used -= found[1]
        if found is not None:
            found[0].unlink(missing_ok=True)


_active: list[Spool] = []
_active_lock = threading.Lock()


@contextmanager
def spooling(max_bytes: int = SPOOL_BYTES, memory_bytes: int = MEMORY_BYTES) -> Iterator[Spool]:
    """A spool for the block (a run's reading and sending), its folder removed when it ends."""
    folder = Path(tempfile.mkdtemp(prefix="doccheck-spool-"))
    run = Spool(folder, max_bytes, memory_bytes)
    with _active_lock:
        _active.append(run)
    try:
        yield run
    finally:
        with _active_lock:
            if run in _active:
                _active.remove(run)
        shutil.rmtree(folder, ignore_errors=True)


def _current() -> Spool | None:
    with _active_lock:
        return _active[-1] if _active else None


def spool(path: UserPath, data: bytes) -> bool:
    """Keep the bytes planning read of a store's file for its sending; False when no spool is
    active (a dry run, a shard's parent), the file is local, or the spool is full."""
    run = _current()
    if run is None or isinstance(path, Path):
        return False
    return run.keep(path, data)


def take_spooled(path: UserPath, size: int | None) -> bytes | None:
    """The spooled bytes of a store's file, once; None when there are none (read it from its store)."""
    run = _current()
    if run is None or isinstance(path, Path):
        return None
    return run.take(path, size)
