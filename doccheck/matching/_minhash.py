"""MinHash signatures and LSH candidates, datasketch's scheme (chosen over ``rensa``: docs/matching.md).

Why datasketch: signatures live in the ledger for as long as a campaign does, and datasketch
2.0 names its permutation scheme (``affine32``) and requires it to load stored hash values
back (``LeanMinHash(hashvalues=..., scheme=...)``), the stability contract stored signatures
need; it is the long-maintained reference. rensa signs ~9× faster, but its digests cannot be
loaded back into any of its sketches or indexes; at ~0.1 ms a document datasketch signs
10,000 essays in under a second of CPU, a small part of the budget.

Signatures are computed over the 32-bit shingle hashes the ledger keeps (see
:mod:`doccheck.matching._shingles`), so they can always be recomputed from stored data.

Since issue 10 the matcher computes datasketch's scheme itself (same permutations, same
pre-mix, same affine map: :func:`signature`), several documents at a time, and imports
datasketch only for the reference (:func:`reference_signature`, the tests) and for band
parameters it has not recorded (:data:`KNOWN_BAND_PARAMS`): datasketch's ``update_batch``
calls a hash function once per value in Python, and its import pulls in scipy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache

import numpy as np

__all__ = [
    "NUM_PERM",
    "SCHEME",
    "SEED",
    "band_keys",
    "band_params",
    "bands_agree",
    "key_pairs",
    "lsh_pairs",
    "range_signatures",
    "reference_signature",
    "signature",
]

NUM_PERM = 128
SEED = 1
#: datasketch's permutation scheme of the signatures (stored with them via the row's scheme).
SCHEME = "affine32"


def _identity(value: int) -> int:
    return value


@lru_cache(maxsize=4)
def _permutations(num_perm: int) -> object:
    """datasketch draws its permutations at every MinHash(); draw them once per size."""
    from datasketch import MinHash

    return MinHash(num_perm=num_perm, seed=SEED, hashfunc=_identity, scheme=SCHEME).permutations


def signature(u32: np.ndarray, num_perm: int = NUM_PERM) -> np.ndarray:
    """MinHash signature (``num_perm`` uint32) of a set of 32-bit shingle hashes.

    Exactly datasketch's ``MinHash(..., scheme="affine32").update_batch(values).hashvalues``
    (its permutations, its MurmurHash3 pre-mix, the affine map mod 2^32, the minimum), computed
    on the array directly: ``update_batch`` first calls the hash function once per value in
    Python, which was most of the matcher's signing time (issue 10).
    ``tests/unit/matching/test_matching_fast.py`` holds the two equal.
    """
    values = np.asarray(u32, dtype=np.uint32)
    out: np.ndarray = range_signatures(values, np.array([0, len(values)], dtype=np.int64), num_perm)[0]
    return out


#: Values whose permutations are taken at once (num_perm × this × 4 bytes: 4 MB, whatever the
#: document's size; measured: 4,096 and more are 3x faster per value than 2,048).
SIGN_VALUES = 8192


def range_signatures(values: np.ndarray, bounds: np.ndarray, num_perm: int = NUM_PERM) -> np.ndarray:
    """``(documents, num_perm)`` signatures of the uint32 value ranges ``bounds[d]:bounds[d+1]``
    (:func:`signature` of each range), several short ranges per pass, a long one in slices."""
    docs = len(bounds) - 1
    out = np.full((docs, num_perm), _EMPTY, dtype=np.uint32)
    a, b = _affine(num_perm)
    hv = values ^ (values >> np.uint32(16))  # datasketch's MurmurHash3 pre-mix (_fmix, 32 bits)
    hv = hv * np.uint32(0x85EBCA6B)
    hv = hv ^ (hv >> np.uint32(13))
    hv = hv * np.uint32(0xC2B2AE35)
    hv = hv ^ (hv >> np.uint32(16))
    buffer = np.empty((num_perm, min(SIGN_VALUES, len(values))), dtype=np.uint32)  # reused: no page faults per pass
    d = 0
    while d < docs:
        # documents d..end-1 hold at most SIGN_VALUES values (or end = d + 1: one long document)
        end = min(max(int(np.searchsorted(bounds, bounds[d] + SIGN_VALUES, side="right")) - 1, d + 1), docs)
        lo, hi = int(bounds[d]), int(bounds[end])
        for start in range(lo, hi, SIGN_VALUES):  # one pass unless one document is longer
            stop = min(start + SIGN_VALUES, hi)
            phv = buffer[:, : stop - start]
            np.multiply(a[:, None], hv[None, start:stop], out=phv)  # wraps mod 2^32, as datasketch's affine32
            np.add(phv, b[:, None], out=phv)
            if end == d + 1:
                np.minimum(out[d], phv.min(axis=1), out=out[d])
            else:
                nonempty = np.flatnonzero(bounds[d + 1 : end + 1] > bounds[d:end]) + d
                out[nonempty] = np.minimum.reduceat(phv, bounds[nonempty] - lo, axis=1).T
        d = end
    return out


def reference_signature(u32: np.ndarray, num_perm: int = NUM_PERM) -> np.ndarray:
    """The signature through datasketch's own ``update_batch`` (the definition; for tests)."""
    from datasketch import MinHash

    m = MinHash(num_perm=num_perm, seed=SEED, hashfunc=_identity, scheme=SCHEME, permutations=_permutations(num_perm))
    if len(u32):
        m.update_batch(u32.tolist())
    return np.asarray(m.hashvalues, dtype=np.uint32)


_EMPTY = np.uint32(0xFFFFFFFF)


@lru_cache(maxsize=4)
def _affine(num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's affine32 permutation parameters (a, b) for ``num_perm``, as uint32 arrays.

    Drawn as ``MinHash._init_permutations`` draws them (``RandomState(seed)``: odd ``a`` below
    2^32, then ``b``), so that matching need not import datasketch, whose import pulls in
    scipy (~55 MB of a dry run's memory, issue 10); ``tests/unit/matching/test_matching_fast.py``
    holds them equal to datasketch's own.
    """
    gen = np.random.RandomState(SEED)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


#: datasketch's ``MinHashLSH(threshold, num_perm, weights)`` (b, r) for the settings in use,
#: so that the default match imports neither datasketch nor scipy (a test holds them equal).
KNOWN_BAND_PARAMS: dict[tuple[float, int, tuple[float, float]], tuple[int, int]] = {
    (0.3, 128, (0.2, 0.8)): (42, 3),
}


@lru_cache(maxsize=16)
def band_params(threshold: float, num_perm: int, weights: tuple[float, float] = (0.2, 0.8)) -> tuple[int, int]:
    """(bands, rows) for ``threshold``: datasketch's own optimisation of the false-positive and
    false-negative areas (weights favour recall: a false candidate costs one exact check)."""
    known = KNOWN_BAND_PARAMS.get((threshold, num_perm, weights))
    if known is not None:
        return known
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
    return int(lsh.b), int(lsh.r)


def lsh_pairs(
    signatures: np.ndarray,
    queries: Iterable[int],
    *,
    threshold: float,
    weights: tuple[float, float] = (0.2, 0.8),
) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of rows whose signatures agree on a whole LSH band, one side a query.

    Banding is datasketch's (``b`` bands of ``r`` rows from :func:`band_params`), done with
    numpy over the signature matrix: one uint64 key per band and document, sorted, equal
    keys grouped. datasketch's ``MinHashLSH`` keeps a Python dict entry per band and
    document (~13 KB a document, 1.3 GB at 100,000: benchmarks/cohort_matching.py); this
    keeps 8 bytes per band and document. Only pairs with a ``queries`` row (this run's
    documents) are returned: earlier runs' pairs were reported by earlier runs.
    """
    n = signatures.shape[0] if signatures.ndim == 2 else 0
    if n < 2:
        return set()
    bands, rows = band_params(threshold, signatures.shape[1], weights)
    is_query = np.zeros(n, dtype=bool)
    is_query[list(queries)] = True

    def keys() -> Iterator[np.ndarray]:
        for band in range(bands):
            block = signatures[:, band * rows : (band + 1) * rows].astype(np.uint64)
            key = np.zeros(n, dtype=np.uint64)
            for col in range(block.shape[1]):
                key = (key ^ block[:, col]) * np.uint64(0x100000001B3) + np.uint64(col + 1)
            yield key

    return key_pairs(keys(), is_query)


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """``(n, bands)`` uint32: a 32-bit key of each band (``rows`` values) of each signature.

    Why 32 bits: it is what the matcher keeps per band and document for the whole campaign
    (168 bytes a document at 42 bands instead of the 512-byte signature). Two signatures
    that agree on a band always get the same key; a key shared by chance is removed by
    :func:`bands_agree` before the pair counts as a candidate.
    """
    n = signatures.shape[0]
    block = signatures[:, : bands * rows].reshape(n, bands, rows).astype(np.uint64)
    acc = np.zeros((n, bands), dtype=np.uint64)
    for r in range(rows):
        acc = acc * np.uint64(0x100000001B3) + block[:, :, r] * _BAND_MULTIPLIERS[r % len(_BAND_MULTIPLIERS)]
    acc ^= acc >> np.uint64(31)
    acc *= np.uint64(0xBF58476D1CE4E5B9)
    acc ^= acc >> np.uint64(29)
    out: np.ndarray = (acc >> np.uint64(32)).astype(np.uint32)
    return out


_BAND_MULTIPLIERS = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
                             dtype=np.uint64)  # fmt: skip


def bands_agree(a: np.ndarray, b: np.ndarray, bands: int, rows: int) -> bool:
    """True when signatures ``a`` and ``b`` are equal on at least one whole band (an LSH candidate)."""
    width = bands * rows
    same = a[:width].reshape(bands, rows) == b[:width].reshape(bands, rows)
    return bool(same.all(axis=1).any())


def key_pairs(columns: Iterable[np.ndarray], current: np.ndarray) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of rows with the same key in some band (each of ``columns``
    is one band's keys of every row, from :func:`band_keys`), one side a ``current`` row:
    one band sorted at a time."""
    n = len(current)
    pairs: set[tuple[int, int]] = set()
    if n < 2:
        return pairs
    for key in columns:
        order = np.argsort(key, kind="stable")
        sorted_keys = key[order]
        starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
        sizes = np.diff(np.r_[starts, n])
        for start, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True):
            members = order[start : start + size]
            if not current[members].any():
                continue
            for x in range(size):
                for y in range(x + 1, size):
                    i, j = int(members[x]), int(members[y])
                    if current[i] or current[j]:
                        pairs.add((i, j) if i < j else (j, i))
    return pairs
