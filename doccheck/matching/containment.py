"""Containment candidates: documents that share several hash-sampled shingles.

Why not LSH alone: a copied section of 125 words inside a 2,000-word essay gives a Jaccard
of ~0.03, which no band setting finds without pairing everyone. Sampling shingles by their
hash (the same ~1 in 8 in every document) keeps the sample of a shared passage shared: a
125-word passage leaves ~15 sampled shingles in both documents, whatever the rest. An
inverted index of the samples then yields, per pair, how many sampled shingles they share.

Boilerplate: a sampled shingle present in more than ``max_df`` documents (a prompt every
student pasted, a licence line) creates no candidate, so a shared template never pairs a
cohort with itself, and a posting list never costs more than ``max_df``² steps.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sampled_pairs"]


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
    values = np.concatenate(samples).astype(np.uint32, copy=False)
    owners = np.repeat(np.arange(n, dtype=np.int64), lengths)
    order = np.argsort(values, kind="stable")
    values, owners = values[order], owners[order]
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    df = np.diff(np.r_[starts, len(values)])
    frequent = values[starts[df > max_df]]
    keep = (df >= 2) & (df <= min(max_df, max_postings or max_df))
    firsts: list[np.ndarray] = []
    seconds: list[np.ndarray] = []
    # Group posting lists by size so pairs are generated with numpy, not a Python loop per list.
    for size in np.unique(df[keep]):
        group_starts = starts[keep & (df == size)]
        members = owners[group_starts[:, None] + np.arange(size)]  # (lists, size), ascending owners
        a, b = np.triu_indices(int(size), k=1)
        firsts.append(members[:, a].ravel())
        seconds.append(members[:, b].ravel())
    if not firsts:
        return set(), frequent
    i = np.concatenate(firsts)
    j = np.concatenate(seconds)
    wanted = current[i] | current[j]
    keys = i[wanted] * n + j[wanted]
    uniq, counts = np.unique(keys, return_counts=True)
    hits = uniq[counts >= min_shared]
    return {(int(k // n), int(k % n)) for k in hits}, frequent
