"""Duplicate-id detection over a whole manifest in ~12 bytes per row, not the rows themselves.

Why: ``validate_row`` needs, for every row, "was this (NFC) id used before, by which row,
spelt how?". A dict of id strings costs ~200 bytes per row and made a 100,000-row manifest's
planning grow with its size (issue 10). This mapping keeps a 64-bit BLAKE2b digest of each
id and the first row's number in two sorted numpy arrays (8 + 4 bytes per row), with a small
dict for the rows of the current stretch that is merged in every ``merge_every`` ids; the
spelling is kept only for the rare ids whose spelling differs from their NFC key.

A false duplicate would need two ids with the same 64-bit digest (probability ~n²/2⁶⁵:
3·10⁻¹⁰ for 100,000 ids); the reason then names the row the digest came from.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["CompactIds"]


def _digest(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


class CompactIds:
    """The ``seen_ids`` mapping of :func:`doccheck.sources.manifest._validate.validate_row`, compact.

    Supports exactly what validation uses: ``key in ids``, ``ids[key]`` → ``(first row,
    spelling)``, ``ids[key] = (row, spelling)`` and ``setdefault``.
    """

    #: Ids held in the dict before they fold into the arrays, unless a caller says otherwise (a
    #: memory test lowers it to measure the arrays' regime at fewer rows).
    MERGE_EVERY = 8192

    def __init__(self, merge_every: int | None = None) -> None:
        self._hashes = np.empty(0, dtype=np.uint64)
        self._rows = np.empty(0, dtype=np.uint32)
        self._recent: dict[int, int] = {}
        self._spellings: dict[int, str] = {}
        self._merge_every = max(1, self.MERGE_EVERY if merge_every is None else merge_every)
        #: The last key looked up, its digest and row: validation asks ``key in ids`` and then
        #: sets the same key, so the second digest and search are skipped (100,000 new ids:
        #: 0.49 → 0.24 s on a quiet core; issue 28).
        self._last: tuple[str, int, int | None] | None = None

    def __len__(self) -> int:
        return len(self._hashes) + len(self._recent)

    def _find(self, digest: int) -> int | None:
        row = self._recent.get(digest)
        if row is not None:
            return row
        if len(self._hashes) == 0:
            return None
        i = int(self._hashes.searchsorted(np.uint64(digest)))  # the method: no np.searchsorted dispatch
        if i < len(self._hashes) and int(self._hashes[i]) == digest:
            return int(self._rows[i])
        return None

    def _lookup(self, key: str) -> tuple[int, int | None]:
        """(digest, first row or None) of ``key``; the last lookup is kept until the next change."""
        last = self._last
        if last is not None and last[0] == key:
            return last[1], last[2]
        digest = _digest(key)
        row = self._find(digest)
        self._last = (key, digest, row)
        return digest, row

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._lookup(key)[1] is not None

    def __getitem__(self, key: str) -> tuple[int, str]:
        digest, row = self._lookup(key)
        if row is None:
            raise KeyError(key)
        return row, self._spellings.get(digest, key)

    def __setitem__(self, key: str, value: tuple[int, str]) -> None:
        digest, found = self._lookup(key)
        row, spelling = value
        if found is not None:  # validation only sets new keys; keep the first row
            return
        self._last = None
        self._recent[digest] = int(row)
        if spelling != key:
            self._spellings[digest] = spelling
        if len(self._recent) >= self._merge_every:
            self._merge()

    def setdefault(self, key: str, value: tuple[int, str]) -> tuple[int, str]:
        if key in self:
            return self[key]
        self[key] = value
        return value

    def _merge(self) -> None:
        """Fold the recent ids into the sorted arrays (O(n) per merge, every ``merge_every`` ids)."""
        if not self._recent:
            return
        new_h = np.fromiter(self._recent.keys(), dtype=np.uint64, count=len(self._recent))
        new_r = np.fromiter(self._recent.values(), dtype=np.uint32, count=len(self._recent))
        hashes = np.concatenate([self._hashes, new_h])
        rows = np.concatenate([self._rows, new_r])
        order = np.argsort(hashes, kind="stable")
        self._hashes, self._rows = hashes[order], rows[order]
        self._recent = {}
