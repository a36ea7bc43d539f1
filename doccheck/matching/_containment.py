"""Containment candidates: documents that share several hash-sampled shingles.

Why not LSH alone: a copied section of 125 words inside a 2,000-word essay gives a Jaccard
of ~0.03, which no band setting finds without pairing everyone. Sampling shingles by their
hash (the same ~1 in 8 in every document) keeps the sample of a shared passage shared: a
125-word passage leaves ~15 sampled shingles in both documents, whatever the rest. An
inverted index of the samples then yields, per pair, how many sampled shingles they share.

Boilerplate: a sampled shingle present in more than ``max_df`` documents (a prompt every
student pasted, a licence line) creates no candidate, so a shared template never pairs a
cohort with itself; one in more than ``max_postings`` documents proposes no pair either (its
pairs grow with the square of its documents).

Memory stays bounded whatever the campaign's size: pairs are generated in chunks of at most
:data:`CHUNK_PAIRS`, and counted exactly in hash partitions of at most :data:`PART_PAIRS`
pair occurrences (each partition regenerates the pairs and keeps its own share), instead of
materialising every pair occurrence of the campaign at once.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator

import numpy as np

__all__ = ["CHUNK_PAIRS", "PART_PAIRS", "SampleSpill", "sampled_pairs"]

#: Pair occurrences generated at once (transient arrays of ~40 bytes each).
CHUNK_PAIRS = 500_000
#: Pair occurrences counted at once (one hash partition of the pair space).
PART_PAIRS = 1_000_000


def sampled_pairs(
    samples: list[np.ndarray],
    current: np.ndarray,
    *,
    max_df: int,
    min_shared: int,
    max_postings: int | None = None,
) -> tuple[set[tuple[int, int]], np.ndarray]:
    """Pairs ``(i, j)``, ``i < j``, sharing at least ``min_shared`` sampled shingles.

    ``samples[i]`` are document i's distinct sampled shingle hashes; ``current[i]`` says
    whether document i belongs to this run (a pair needs one such side). Returns the pairs
    and the sampled hashes found in more than ``max_df`` documents (boilerplate). Shingles in
    more than ``max_postings`` documents propose no pair (bounds the work at ``max_postings``²).
    """
    n = len(samples)
    if n < 2:
        return set(), np.empty(0, dtype=np.uint32)
    lengths = np.fromiter((len(s) for s in samples), dtype=np.int64, count=n)
    if lengths.sum() == 0:
        return set(), np.empty(0, dtype=np.uint32)
    # One uint64 per sample, (hash << 32) | owner, sorted in place: 8 bytes a sample at the peak.
    combined = np.concatenate(samples).astype(np.uint64) << np.uint64(32)
    combined |= np.repeat(np.arange(n, dtype=np.uint64), lengths)
    combined.sort()
    values = (combined >> np.uint64(32)).astype(np.uint32)
    owners = (combined & np.uint64(0xFFFFFFFF)).astype(np.int32)  # ascending within each hash
    del combined
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    df = np.diff(np.r_[starts, len(values)])
    frequent = values[starts[df > max_df]]
    del values
    keep = (df >= 2) & (df <= min(max_df, max_postings or max_df))
    sizes = df[keep]
    lists = starts[keep]
    del starts, df, keep
    return _counted_pairs(owners, lists, sizes, current, n, min_shared), frequent


def _counted_pairs(
    owners: np.ndarray, lists: np.ndarray, sizes: np.ndarray, current: np.ndarray, n: int, min_shared: int
) -> set[tuple[int, int]]:
    """Pairs sharing at least ``min_shared`` posting lists (``owners[lists[k]:lists[k]+sizes[k]]``,
    ascending), counted exactly in hash partitions of at most :data:`PART_PAIRS` occurrences."""
    total = int((sizes.astype(np.int64) * (sizes - 1) // 2).sum())
    if total == 0:
        return set()
    parts = max(1, math.ceil(total / PART_PAIRS))
    found: set[tuple[int, int]] = set()
    for part in range(parts):
        keys = [
            k if parts == 1 else k[_mix(k) % np.uint64(parts) == part]
            for k in _pair_keys(owners, lists, sizes, current, n)
        ]
        keys = [k for k in keys if len(k)]
        if not keys:
            continue
        uniq, counts = np.unique(np.concatenate(keys), return_counts=True)
        del keys
        found.update((int(k // n), int(k % n)) for k in uniq[counts >= min_shared])
    return found


class SampleSpill:
    """The campaign's sampled shingles, (hash, owner) pairs, waiting in temporary files.

    Why: an in-memory index holds every sample of the campaign at once (~50 a document,
    8 bytes each while sorting: ~40 MB at 100,000 documents, issue 10). Here samples are
    appended to :data:`PARTS` files by the top bits of their hash, and :meth:`pairs` sorts
    one file at a time, keeping only the posting lists that can propose a pair (shared by 2
    to ``max_postings`` documents), which are few: most sampled shingles are in one document.
    """

    PARTS = 64  # ~0.6 MB a part at 100,000 documents: the sort of one part is the transient peak

    def __init__(self) -> None:
        self._files = [tempfile.TemporaryFile(prefix="doccheck-samples-") for _ in range(self.PARTS)]  # noqa: SIM115
        self.documents = 0

    def add(self, values: np.ndarray, owners: np.ndarray) -> None:
        """Append samples ``values`` (uint32) of documents ``owners`` (their row in the campaign)."""
        combined = (values.astype(np.uint64) << np.uint64(32)) | owners.astype(np.uint64)
        part = (values >> np.uint32(26)).astype(np.intp)  # 64 parts by the top 6 bits
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], np.arange(self.PARTS + 1))
        for k in range(self.PARTS):
            if bounds[k + 1] > bounds[k]:
                self._files[k].write(combined[order[bounds[k] : bounds[k + 1]]].tobytes())

    def pairs(
        self, current: np.ndarray, *, max_df: int, min_shared: int, max_postings: int | None = None
    ) -> tuple[set[tuple[int, int]], np.ndarray]:
        """As :func:`sampled_pairs` (same pairs, same boilerplate samples), one part in memory at a time."""
        n = len(current)
        limit = min(max_df, max_postings or max_df)
        owners_kept: list[np.ndarray] = []
        sizes_kept: list[np.ndarray] = []
        frequent: list[np.ndarray] = []
        for handle in self._files:
            handle.flush()
            handle.seek(0)
            combined = np.frombuffer(handle.read(), dtype=np.uint64).copy()
            if not len(combined):
                continue
            combined.sort()
            values = (combined >> np.uint64(32)).astype(np.uint32)
            starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
            df = np.diff(np.r_[starts, len(values)])
            frequent.append(values[starts[df > max_df]])
            keep = (df >= 2) & (df <= limit)
            if keep.any():
                members = np.repeat(keep, df)
                owners_kept.append((combined[members] & np.uint64(0xFFFFFFFF)).astype(np.int32))
                sizes_kept.append(df[keep])
        boilerplate = np.concatenate(frequent) if frequent else np.empty(0, dtype=np.uint32)
        if n < 2 or not sizes_kept:
            return set(), boilerplate
        owners = np.concatenate(owners_kept)
        sizes = np.concatenate(sizes_kept)
        lists = np.r_[0, np.cumsum(sizes)[:-1]]
        return _counted_pairs(owners, lists, sizes, current, n, min_shared), boilerplate

    def close(self) -> None:
        """Delete the temporary files."""
        for handle in self._files:
            handle.close()


def _pair_keys(
    owners: np.ndarray, lists: np.ndarray, sizes: np.ndarray, current: np.ndarray, n: int
) -> Iterator[np.ndarray]:
    """``i * n + j`` of every pair of documents sharing a posting list (one side current),
    a chunk of at most ~:data:`CHUNK_PAIRS` at a time; lists of one size are done together."""
    for size in np.unique(sizes).tolist():
        group = lists[sizes == size]
        a, b = np.triu_indices(size, k=1)
        per_chunk = max(1, CHUNK_PAIRS // len(a))
        for start in range(0, len(group), per_chunk):
            members = owners[group[start : start + per_chunk, None] + np.arange(size)]  # ascending owners
            i = members[:, a].ravel().astype(np.int64)
            j = members[:, b].ravel().astype(np.int64)
            wanted = current[i] | current[j]
            yield i[wanted] * n + j[wanted]


def _mix(keys: np.ndarray) -> np.ndarray:
    """A cheap well-spread hash of the pair keys, to cut the pair space into partitions."""
    x = keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return x ^ (x >> np.uint64(31))
