"""Word shingles as stable 64-bit hashes, and the compact 32-bit form the ledger keeps.

Why our own hashing: a signature stored today must compare with one computed next term on
another machine, so the hash must not depend on Python's per-process ``hash()`` salt. Each
distinct word is hashed once (BLAKE2b, 8 bytes); a shingle's hash is a polynomial of its
:data:`SHINGLE` word hashes finished by the splitmix64 mixer, computed for all positions at
once with numpy (uint64 arithmetic wraps, which is what we want).

The ledger keeps the top 32 bits of each distinct shingle hash (``uint32``, 4 bytes a
shingle): enough to count an exact overlap between two documents (a spurious collision
between two 500-shingle sets has odds of about 1 in 17,000 and moves one shingle), never
enough to rebuild a text. Words are those of :func:`doccheck.extract.words_of`, the same
lower-cased words the emulator shingles.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import numpy as np

from doccheck.extract import (
    WORD_RE,  # one definition of a word for the whole project
    word_tokens,
)

__all__ = [
    "MAX_WORDS",
    "SHINGLE",
    "WordHasher",
    "document_shingles",
    "pack_u32",
    "sampled",
    "shingle_hashes",
    "to_u32",
    "unpack_u32",
    "words_for_matching",
]

#: Words per shingle: the emulator's (and most checkers') choice; short enough that a
#: lightly edited sentence still shares shingles, long enough that unrelated essays do not.
SHINGLE = 5
#: Words of one document considered at most (a bound on time and memory for huge files).
MAX_WORDS = 200_000
#: One shingle in SAMPLE_MOD is "sampled" (by its hash, so the same shingles in every
#: document): the containment index works on these. 1/8 keeps ~60 per 500-word essay.
SAMPLE_MOD = 8

_MULTIPLIERS = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD],
    dtype=np.uint64,
)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: spreads every input bit over every output bit."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = x ^ (x >> np.uint64(31))
    return out


class WordHasher:
    """Stable 64-bit word hashes, each distinct word hashed once (a cache per matcher run).

    Keyed by the word's UTF-8 bytes (what is hashed). The cache holds at most ``max_cache``
    words (~130 bytes each): the frequent words of a campaign arrive early and stay; a rare
    word past the cap is hashed each time it appears, never kept.
    """

    def __init__(self, max_cache: int = 250_000) -> None:
        self._cache: dict[bytes, int] = {}
        self._max_cache = max_cache

    def __call__(self, words: Sequence[str]) -> np.ndarray:
        return self.tokens([w.encode("utf-8") for w in words])

    def tokens(self, tokens: Sequence[bytes]) -> np.ndarray:
        """The hashes of ``tokens`` (UTF-8 words) in order, as uint64."""
        cache = self._cache
        try:  # the usual case once a campaign's vocabulary is cached: one C-level pass
            return np.fromiter(map(cache.__getitem__, tokens), dtype=np.uint64, count=len(tokens))
        except KeyError:
            pass
        values = list(map(cache.get, tokens))
        for i, value in enumerate(values):
            if value is None:
                token = tokens[i]
                value = cache.get(token)
                if value is None:
                    value = int.from_bytes(hashlib.blake2b(token, digest_size=8).digest(), "little")
                    if len(cache) < self._max_cache:
                        cache[token] = value
                values[i] = value
        return np.array(values, dtype=np.uint64)


def words_for_matching(text: str) -> list[str]:
    """Exactly :func:`doccheck.extract.words_of` (``findall`` instead of match objects: faster)."""
    return [w.lower() for w in WORD_RE.findall(text)] if text else []


def shingle_hashes(text_or_words: str | Sequence[str], hasher: WordHasher | None = None) -> np.ndarray:
    """Distinct 64-bit hashes of every run of :data:`SHINGLE` consecutive words, sorted.

    A text shorter than a shingle yields one shingle of all its words (so a two-word text
    still has an identity); an empty text yields an empty array.
    """
    words = words_for_matching(text_or_words) if isinstance(text_or_words, str) else list(text_or_words)
    words = words[:MAX_WORDS]
    if not words:
        return np.empty(0, dtype=np.uint64)
    return np.unique(_raw_shingles((hasher or WordHasher())(words)))


def _raw_shingles(wh: np.ndarray) -> np.ndarray:
    """The 64-bit hash of every run of SHINGLE word hashes, in order (not distinct)."""
    n = max(1, len(wh) - SHINGLE + 1)
    acc = np.zeros(n, dtype=np.uint64)
    for k in range(min(SHINGLE, len(wh))):
        acc = acc * np.uint64(0x100000001B3) + wh[k : k + n] * _MULTIPLIERS[k]
    return _splitmix64(acc)


def document_shingles(text: str, hasher: WordHasher) -> tuple[int, np.ndarray]:
    """(words, stored shingles) of a text: ``len(words_for_matching(text))`` and
    ``to_u32(shingle_hashes(text, hasher))``, without a Python string per word.

    The matcher's hot path (issue 10): words come from :func:`doccheck.extract.word_tokens`
    (bytes, lower-cased, the same words), and the top 32 bits are kept before the one sort.
    ``tests/unit/matching/test_matching_fast.py`` holds it equal to the reference functions.
    """
    tokens = word_tokens(text)
    words = len(tokens)
    if not words:
        return 0, np.empty(0, dtype=np.uint32)
    raw = _raw_shingles(hasher.tokens(tokens[:MAX_WORDS] if words > MAX_WORDS else tokens))
    return words, _distinct((raw >> np.uint64(32)).astype(np.uint32))


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of a small array by sort and mask (numpy 2's hash-based unique costs ~30 µs a call)."""
    values.sort()
    keep = np.empty(len(values), dtype=bool)
    keep[:1] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    out: np.ndarray = values[keep]
    return out


def to_u32(hashes: np.ndarray) -> np.ndarray:
    """The stored form: the top 32 bits of each hash, distinct and sorted."""
    return np.unique((hashes >> np.uint64(32)).astype(np.uint32))


def sampled(u32: np.ndarray) -> np.ndarray:
    """The shingles of the containment index: those whose (stored) hash is 0 mod SAMPLE_MOD."""
    # The low bits of the top half are as well mixed as any (splitmix64 output).
    sample: np.ndarray = u32[(u32 % np.uint32(SAMPLE_MOD)) == 0]
    return sample


def pack_u32(values: np.ndarray) -> bytes:
    """Little-endian bytes of a uint32 array (what the ledger stores)."""
    return np.ascontiguousarray(values, dtype="<u4").tobytes()


def unpack_u32(data: bytes | None) -> np.ndarray:
    """The uint32 array back from :func:`pack_u32` (empty for None)."""
    if not data:
        return np.empty(0, dtype=np.uint32)
    if len(data) % 4:
        raise ValueError(f"stored shingle data has {len(data)} bytes, not a multiple of 4")
    return np.frombuffer(data, dtype="<u4").astype(np.uint32)


def remove(hashes: np.ndarray, excluded: Iterable[np.ndarray]) -> np.ndarray:
    """``hashes`` without any value of the ``excluded`` arrays (template shingles)."""
    for ex in excluded:
        if len(ex) and len(hashes):
            hashes = hashes[~np.isin(hashes, ex, assume_unique=True)]
    return hashes
