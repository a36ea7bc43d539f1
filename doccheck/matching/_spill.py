"""A dry run's signature store that keeps its rows in temporary files, not in memory.

Why: :class:`~doccheck.matching._signature_store.MemoryStore` keeps every document's row (ids,
signature, samples, full shingle set: ~3 KB for 400 words) although the matcher reads them
back only once, streamed, and the shingle sets only for candidate pairs. For a 100,000-row
dry run that grew with the manifest (issue 10). :class:`SpillStore` answers the same five
questions; each row goes to two anonymous temporary files (deleted on close or exit):
its metadata, signature and samples to one (read back in order), its shingle set to the
other (read back by offset). What stays in memory is 10 bytes a row (its shingles' offset and a
code for its campaign and scheme).
"""

from __future__ import annotations

import struct
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

from doccheck.matching._signature_store import StoredSignature

__all__ = ["SpillStore"]

#: Per row in the metadata file: lengths of document_id, content_hash, run_id, signature,
#: sample (uint32 each), then words and shingle_count (int64), then those five byte strings.
_HEAD = struct.Struct("<5I2q")
_READ = 1 << 20


class SpillStore:
    """Like ``MemoryStore`` (nothing written anywhere lasting), rows spilled to temp files."""

    def __init__(self) -> None:
        self._meta: IO[bytes] = tempfile.TemporaryFile(prefix="doccheck-signatures-")  # noqa: SIM115 - as long as the store
        self._shingles: IO[bytes] = tempfile.TemporaryFile(prefix="doccheck-shingles-")  # noqa: SIM115
        self._groups: list[tuple[str, str]] = []  # distinct (campaign, scheme)
        self._group_of = array("H")  # per row: index into _groups
        self._at = array("q")  # per row: offset of its shingles (row i spans _at[i] .. _at[i + 1])
        self._at.append(0)
        self._meta_end = 0

    def __len__(self) -> int:
        return len(self._group_of)

    def _group(self, campaign: str, scheme: str) -> int:
        key = (campaign, scheme)
        if key not in self._groups:
            self._groups.append(key)
        return self._groups.index(key)

    def add(self, rows: Iterable[Mapping[str, Any]]) -> int:
        count = 0
        meta: list[bytes] = []
        shingles: list[bytes] = []
        end = self._at[-1]
        for row in rows:
            texts = [str(row[k]).encode("utf-8") for k in ("document_id", "content_hash", "run_id")]
            signature, sample = bytes(row["signature"]), bytes(row["sample"])
            meta += [_HEAD.pack(*(len(t) for t in texts), len(signature), len(sample), int(row["words"]),
                                int(row["shingle_count"])), *texts, signature, sample]  # fmt: skip
            data = bytes(row["shingles"])
            shingles.append(data)
            end += len(data)
            self._at.append(end)
            self._group_of.append(self._group(str(row["campaign"]), str(row["scheme"])))
            count += 1
        self._meta.seek(self._meta_end)
        self._meta_end += self._meta.write(b"".join(meta))
        self._shingles.seek(self._at[-1 - count])
        self._shingles.write(b"".join(shingles))
        return count

    def _records(self) -> Iterator[tuple[int, tuple[bytes, ...], int, int]]:
        """Every row in order: (row id, its five byte strings, words, shingle_count)."""
        self._meta.flush()
        self._meta.seek(0)
        buffer = b""
        pos = 0
        for row_id in range(1, len(self._group_of) + 1):
            if len(buffer) - pos < _HEAD.size:
                buffer = buffer[pos:] + self._meta.read(_READ)
                pos = 0
            *lengths, words, shingle_count = _HEAD.unpack_from(buffer, pos)
            pos += _HEAD.size
            need = sum(lengths)
            if len(buffer) - pos < need:
                buffer = buffer[pos:] + self._meta.read(max(_READ, need))
                pos = 0
            parts = []
            for length in lengths:
                parts.append(buffer[pos : pos + length])
                pos += length
            yield row_id, tuple(parts), words, shingle_count

    def keys(self, campaign: str, scheme: str) -> set[tuple[str, str]]:
        return {(r[1][0].decode(), r[1][1].decode()) for r in self._records() if self._is(r[0], campaign, scheme)}

    def _is(self, row_id: int, campaign: str, scheme: str) -> bool:
        return self._groups[self._group_of[row_id - 1]] == (campaign, scheme)

    def signatures(self, campaign: str, scheme: str) -> Iterator[StoredSignature]:
        for row_id, (doc, content_hash, run, signature, sample), words, size in self._records():
            if self._is(row_id, campaign, scheme):
                yield row_id, doc.decode(), content_hash.decode(), run.decode(), words, size, signature, sample

    def _read(self, row_id: int) -> bytes:
        start, end = self._at[row_id - 1], self._at[row_id]
        self._shingles.seek(start)
        return self._shingles.read(end - start)

    def shingles(self, ids: Sequence[int]) -> dict[int, bytes]:
        self._shingles.flush()
        return {i: self._read(i) for i in sorted(ids)}

    def iter_shingles(self, campaign: str, scheme: str) -> Iterator[tuple[int, bytes]]:
        self._shingles.flush()
        self._shingles.seek(0)
        for row_id in range(1, len(self._group_of) + 1):
            data = self._shingles.read(self._at[row_id] - self._at[row_id - 1])
            if self._is(row_id, campaign, scheme):
                yield row_id, data

    def close(self) -> None:
        """Delete the temporary files."""
        self._meta.close()
        self._shingles.close()
