"""A dry run's signature store whose shingle sets wait in a temporary file, not in memory.

Why: :class:`~doccheck.matching.store.MemoryStore` keeps every document's full shingle set
(~1.6 KB for 400 words) although the matcher reads them only for candidate pairs and once,
streamed, for boilerplate. For a 100,000-row dry run that was the largest part of its peak
memory (issue 10). :class:`SpillStore` answers the same five questions; the shingle bytes go
to an anonymous temporary file (deleted on close or exit) and come back by offset.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from doccheck.matching.store import StoredSignature

__all__ = ["SpillStore"]


class SpillStore:
    """Like ``MemoryStore`` (nothing written anywhere lasting), shingles spilled to a temp file."""

    def __init__(self) -> None:
        self._rows: list[tuple[str, str, str, str, str, int, int, bytes, bytes, int, int]] = []
        self._file = tempfile.TemporaryFile(prefix="doccheck-shingles-")  # noqa: SIM115 - open as long as the store
        self._end = 0

    def keys(self, campaign: str, scheme: str) -> set[tuple[str, str]]:
        return {(r[2], r[3]) for r in self._rows if r[0] == campaign and r[1] == scheme}

    def add(self, rows: Iterable[Mapping[str, Any]]) -> int:
        count = 0
        self._file.seek(self._end)
        for row in rows:
            data = bytes(row["shingles"])
            self._file.write(data)
            self._rows.append((row["campaign"], row["scheme"], row["document_id"], row["content_hash"], row["run_id"],
                               int(row["words"]), int(row["shingle_count"]), bytes(row["signature"]),
                               bytes(row["sample"]), self._end, len(data)))  # fmt: skip
            self._end += len(data)
            count += 1
        return count

    def signatures(self, campaign: str, scheme: str) -> Iterator[StoredSignature]:
        for i, r in enumerate(self._rows, start=1):
            if r[0] == campaign and r[1] == scheme:
                yield (i, r[2], r[3], r[4], r[5], r[6], r[7], r[8])

    def _read(self, row_id: int) -> bytes:
        offset, length = self._rows[row_id - 1][9:11]
        self._file.seek(offset)
        return self._file.read(length)

    def shingles(self, ids: Sequence[int]) -> dict[int, bytes]:
        return {i: self._read(i) for i in ids}

    def iter_shingles(self, campaign: str, scheme: str) -> Iterator[tuple[int, bytes]]:
        for i, r in enumerate(self._rows, start=1):
            if r[0] == campaign and r[1] == scheme:
                yield i, self._read(i)

    def close(self) -> None:
        """Delete the temporary file."""
        self._file.close()
