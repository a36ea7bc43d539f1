"""Shingles, signatures and samples of a block of documents at once (the matcher's hot loop).

Why a block: per document, shingling and signing are a dozen numpy calls on ~400 values,
so their fixed cost per call (~1-2 µs each) was a large part of the matcher's time on a
term (issue 10). Here the words of up to :data:`BLOCK` documents are hashed in one
dictionary pass and one array, every 5-word window of the block is hashed at once (windows
that cross two documents are dropped), distinct values are found with one sort of
``(document, hash)`` keys, and signatures are taken for a few documents at a time.

The results are exactly those of the per-document functions
(:func:`~doccheck.matching._shingles.document_shingles`, :func:`~doccheck.matching._minhash.signature`,
:func:`~doccheck.matching._shingles.sampled`); ``tests/unit/matching/test_matching_fast.py`` holds them equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from doccheck.extract import word_tokens
from doccheck.matching import _minhash as minhash
from doccheck.matching._shingles import MAX_WORDS, SAMPLE_MOD, SHINGLE, WordHasher, _raw_shingles, _splitmix64

__all__ = ["BLOCK", "Signed", "sign_block"]

#: Documents signed together (their word hashes: ~3 KB each).
BLOCK = 128
_MULTIPLIERS = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD],
    dtype=np.uint64,
)


@dataclass
class Signed:
    """One document's matching data: its word count and three uint32 arrays."""

    words: int
    shingles: np.ndarray  # distinct 32-bit shingle hashes, sorted, template removed
    signature: np.ndarray  # num_perm uint32
    sample: np.ndarray  # the shingles that are 0 mod SAMPLE_MOD


def sign_block(
    texts: list[str], hasher: WordHasher, template: np.ndarray, num_perm: int = minhash.NUM_PERM
) -> list[Signed]:
    """:class:`Signed` for each of ``texts`` (in order), ``template`` shingles removed from each."""
    tokens = [word_tokens(t) for t in texts]
    words = [len(t) for t in tokens]
    kept = [t if len(t) <= MAX_WORDS else t[:MAX_WORDS] for t in tokens]
    del tokens
    lengths = np.array([len(t) for t in kept], dtype=np.int64)
    flat = [w for t in kept for w in t]
    del kept
    hashes = hasher.tokens(flat) if flat else np.empty(0, dtype=np.uint64)
    del flat
    starts = np.r_[0, np.cumsum(lengths)]
    # Every window of SHINGLE word hashes of the block, then only windows inside one document.
    total = len(hashes)
    n_windows = max(0, total - SHINGLE + 1)
    acc = np.zeros(n_windows, dtype=np.uint64)
    for k in range(SHINGLE):
        acc = acc * np.uint64(0x100000001B3) + hashes[k : k + n_windows] * _MULTIPLIERS[k]
    raw = _splitmix64(acc) if n_windows else acc
    owner_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []
    full = lengths >= SHINGLE
    if full.any():
        docs = np.flatnonzero(full)
        counts = lengths[docs] - SHINGLE + 1
        # window positions of each full document: starts[d] .. starts[d] + counts - 1
        offsets = np.repeat(starts[docs] - np.r_[0, np.cumsum(counts)[:-1]], counts)
        positions = np.arange(int(counts.sum()), dtype=np.int64) + offsets
        value_parts.append(raw[positions])
        owner_parts.append(np.repeat(docs, counts))
    for d in np.flatnonzero((lengths > 0) & ~full).tolist():  # shorter than a shingle: one of all its words
        value_parts.append(_raw_shingles(hashes[starts[d] : starts[d + 1]]))
        owner_parts.append(np.array([d], dtype=np.int64))
    if value_parts:
        top = np.concatenate(value_parts) >> np.uint64(32)
        key = (np.concatenate(owner_parts).astype(np.uint64) << np.uint64(32)) | top
        key.sort()
        distinct = key[np.r_[True, key[1:] != key[:-1]]] if len(key) else key
        owners = (distinct >> np.uint64(32)).astype(np.int64)
        values = (distinct & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        if len(template):
            keep = ~np.isin(values, template)
            owners, values = owners[keep], values[keep]
    else:
        owners = np.empty(0, dtype=np.int64)
        values = np.empty(0, dtype=np.uint32)
    bounds = np.searchsorted(owners, np.arange(len(texts) + 1))
    signatures = _signatures(values, bounds, num_perm)
    return [
        Signed(
            words=words[d],
            shingles=values[bounds[d] : bounds[d + 1]],
            signature=signatures[d],
            sample=(lambda s: s[(s % np.uint32(SAMPLE_MOD)) == 0])(values[bounds[d] : bounds[d + 1]]),
        )
        for d in range(len(texts))
    ]


def _signatures(values: np.ndarray, bounds: np.ndarray, num_perm: int) -> np.ndarray:
    """``(documents, num_perm)`` MinHash signatures of the value ranges ``bounds[d]:bounds[d+1]``."""
    return minhash.range_signatures(values, bounds, num_perm)
