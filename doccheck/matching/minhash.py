"""MinHash signatures and LSH candidates, with ``datasketch`` (chosen over ``rensa``: docs/matching.md).

Why datasketch: a stored signature goes back into an LSH index as it is
(``LeanMinHash(hashvalues=..., scheme=...)``), so a later run of the campaign compares its
new documents with old ones from the stored signatures alone. rensa computes signatures
10-20× faster but has no way to rebuild a sketch from a stored digest for its LSH index; at
~0.4 ms a document datasketch still signs 10,000 essays in a few seconds.

Signatures are computed over the 32-bit shingle hashes the ledger keeps (see
:mod:`doccheck.matching.shingles`), so they can always be recomputed from stored data.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

__all__ = ["NUM_PERM", "SCHEME", "SEED", "lsh_pairs", "signature"]

NUM_PERM = 128
SEED = 1
#: datasketch's permutation scheme of the signatures (stored with them via the row's scheme).
SCHEME = "affine32"


def _identity(value: int) -> int:
    return value


def signature(u32: np.ndarray, num_perm: int = NUM_PERM) -> np.ndarray:
    """MinHash signature (``num_perm`` uint32) of a set of 32-bit shingle hashes."""
    m = MinHash(num_perm=num_perm, seed=SEED, hashfunc=_identity, scheme=SCHEME)
    if len(u32):
        m.update_batch(u32.tolist())
    return np.asarray(m.hashvalues, dtype=np.uint32)


def lsh_pairs(
    signatures: np.ndarray,
    queries: Iterable[int],
    *,
    threshold: float,
    weights: tuple[float, float] = (0.2, 0.8),
) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of rows whose signatures share an LSH band, for the query rows.

    Every row is indexed; only the ``queries`` rows (this run's documents) are looked up, so
    old documents are compared with new ones but old pairs are not searched again. Weights
    favour recall: a false candidate costs one exact verification, a missed pair is lost.
    """
    n, num_perm = signatures.shape if signatures.ndim == 2 else (0, NUM_PERM)
    pairs: set[tuple[int, int]] = set()
    if n < 2:
        return pairs
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
    sketches = [LeanMinHash(seed=SEED, hashvalues=signatures[i], scheme=SCHEME) for i in range(n)]
    with lsh.insertion_session() as session:
        for i, sketch in enumerate(sketches):
            session.insert(i, sketch, check_duplication=False)
    for i in queries:
        for j in lsh.query(sketches[i]):
            if j != i:
                pairs.add((i, j) if i < j else (j, i))
    return pairs
