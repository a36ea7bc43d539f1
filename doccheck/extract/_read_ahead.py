"""A store's files read a few chunks ahead of the manifest's rows, on a thread of their own.

Why: planning read every store file of a manifest (hash, word count) before its first row was
planned, so no batch could be sent until all were read: 10,000 documents at 30 ms a GET, 16 at a
time, are ~20 s at the least before the first request to the service, whose own requests the reads
should overlap (issue 48's benchmark: 0.73 of the local run's throughput). Here the reads run on a
thread of their own, a chunk at a time in manifest order, at most ``chunks_ahead`` chunks ahead of
the rows; a row whose file is being read waits for that file's chunk only, and the run's batches
go out while the next files are read. A row that asks for a file not read yet lifts the bound
until the reader reaches it (or has read everything), so neither side can wait for the other for
ever. What a row waits for is the reader's answer in the word store; a file the reader could not
read is left to the row, which reads it and reports it as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

__all__ = ["ReadAhead"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class ReadAhead(Generic[_K, _V]):
    """``read_chunk`` over ``files`` (key -> item) a chunk at a time, on a thread, ``chunks_ahead``
    chunks ahead of the callers of :meth:`wait_for` at most."""

    def __init__(
        self,
        files: Iterable[tuple[_K, _V]],
        read_chunk: Callable[[Mapping[_K, _V]], object],
        *,
        chunk: int = 200,
        chunks_ahead: int = 4,
    ) -> None:
        self._files = files
        self._read_chunk = read_chunk
        self._chunk = max(1, chunk)
        self._room = self._chunk * max(1, chunks_ahead)
        self._cond = threading.Condition()
        self._pending: OrderedDict[_K, bool] = OrderedDict()  # in order; True once its chunk was read
        self._waiting = 0
        self._finished = False
        self._stopped = False
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name="doccheck-read-ahead", daemon=True)

    def start(self) -> ReadAhead[_K, _V]:
        """Start reading; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the chunk being read (if any) and wait for the thread."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join()

    def wait_for(self, key: _K) -> None:
        """Return once ``key``'s chunk has been read, or the reader has ended without it; every
        key before ``key`` is forgotten (the rows come in the same order as the files)."""
        with self._cond:
            self._waiting += 1
            self._cond.notify_all()
            try:
                while not self._stopped:
                    if self._pending.get(key):
                        while self._pending and self._pending.popitem(last=False)[0] != key:
                            pass
                        self._cond.notify_all()  # room for the reader
                        return
                    if self._finished and key not in self._pending:
                        return
                    self._cond.wait()
            finally:
                self._waiting -= 1

    def _run(self) -> None:
        try:
            batch: dict[_K, _V] = {}
            for key, item in self._files:
                batch[key] = item
                if len(batch) >= self._chunk:
                    if not self._read(batch):
                        return
                    batch = {}
            self._read(batch)
        except Exception as exc:  # noqa: BLE001 - handed to the caller at the block's end
            self.error = exc
        finally:
            with self._cond:
                self._finished = True
                self._cond.notify_all()

    def _read(self, batch: dict[_K, _V]) -> bool:
        """Read one chunk once there is room for it (False: stopped)."""
        if not batch:
            return True
        with self._cond:
            while len(self._pending) >= self._room and not self._waiting and not self._stopped:
                self._cond.wait()
            if self._stopped:
                return False
            for key in batch:
                self._pending.setdefault(key, False)
        try:
            self._read_chunk(batch)
        finally:
            with self._cond:
                for key in batch:
                    if key in self._pending:
                        self._pending[key] = True
                self._cond.notify_all()
        return True
