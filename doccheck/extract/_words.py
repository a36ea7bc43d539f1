"""The service's word rule, computed with numpy over code points instead of a regex per word.

Why: ``len(WORD_RE.findall(text))`` built a Python string per word only to count them; it
was the largest cost of planning a term (~55 µs for a 400-word row, issue 10), and the
cohort matcher ran the same regex again and lower-cased every word. The rule itself is
unchanged (``doccheck.extract.WORD_RE``: ``[^\\W_]+(?:['’\\-][^\\W_]+)*``):

* a word is a maximal run of alphanumeric characters (``str.isalnum``, which is what the
  regex's ``[^\\W_]`` means for ``str`` patterns), where a single joiner (``'``, ``’`` or
  ``-``) with an alphanumeric character on *both* sides joins two runs into one word;
* so the count is (runs of alphanumerics) − (joiners between two alphanumerics), and the
  words are the tokens left when every other character, and every joiner not between two
  alphanumerics, becomes a space.

ASCII text (most essays) is handled on its bytes with 256-entry tables; other text on its
UTF-32 code points with a table of every code point (1.1 MB, built on first use). Text that
cannot be encoded (a lone surrogate) falls back to the regex. ``tests/unit/extract/test_words.py``
holds both functions equal to the regex with hypothesis.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

__all__ = ["WORD_RE", "count_words", "word_tokens", "words_of"]

#: The rule: one definition of a word for the whole project (billing, planning, matching).
WORD_RE = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)
_JOINERS = (ord("'"), ord("-"), ord("’"))
_SPACE = 32

_ASCII_ALNUM = np.array([chr(c).isalnum() for c in range(128)] + [False] * 128, dtype=bool)
_ASCII_JOINER = np.zeros(256, dtype=bool)
_ASCII_JOINER[[ord("'"), ord("-")]] = True
#: ASCII bytes → the lower-cased letter or digit, the joiner itself, or a space.
_ASCII_CLEAN = bytes(
    (ord(chr(c).lower()) if _ASCII_ALNUM[c] else c if _ASCII_JOINER[c] else _SPACE) for c in range(256)
)
#: ASCII bytes → the lower-cased letter or digit, else a space (text without joiners).
_ASCII_WORDS = bytes((ord(chr(c).lower()) if _ASCII_ALNUM[c] else _SPACE) for c in range(256))


@lru_cache(maxsize=1)
def _unicode_alnum() -> np.ndarray:
    """``str.isalnum`` of every code point (built once, on the first non-ASCII text)."""
    return np.fromiter((chr(c).isalnum() for c in range(0x110000)), dtype=bool, count=0x110000)


def _joined(codes: np.ndarray, alnum: np.ndarray, joiner: np.ndarray) -> np.ndarray:
    """Joiners with an alphanumeric on both sides (the ones inside a word), as a mask."""
    inner = np.zeros(len(codes), dtype=bool)
    if len(codes) >= 3:
        inner[1:-1] = joiner[1:-1] & alnum[:-2] & alnum[2:]
    return inner


def _count(alnum: np.ndarray, joiner: np.ndarray | None) -> int:
    runs = int(alnum[0]) + int(np.count_nonzero(alnum[1:] & ~alnum[:-1]))
    if joiner is not None and len(alnum) >= 3:
        runs -= int(np.count_nonzero(joiner[1:-1] & alnum[:-2] & alnum[2:]))
    return runs


def count_words(text: str) -> int:
    """Number of words of ``text`` under the service's rule (equal to ``len(WORD_RE.findall(text))``)."""
    if not text:
        return 0
    if text.isascii():
        data = text.encode("ascii")
        codes = np.frombuffer(data, dtype=np.uint8)
        has_joiner = b"'" in data or b"-" in data
        return _count(_ASCII_ALNUM[codes], _ASCII_JOINER[codes] if has_joiner else None)
    try:
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    except UnicodeEncodeError:  # a lone surrogate: the regex still defines the count
        return len(WORD_RE.findall(text))
    return _count(_unicode_alnum()[points], np.isin(points, _JOINERS))


def word_tokens(text: str) -> list[bytes]:
    """The words of ``text``, lower-cased, as UTF-8 bytes, in order.

    Equal to ``[w.encode() for w in doccheck.extract.words_of(text)]``; bytes because the
    matcher hashes bytes, and ASCII text then never becomes Python strings per word.
    """
    if not text:
        return []
    if text.isascii():
        data = text.encode("ascii")
        if b"'" not in data and b"-" not in data:
            return data.translate(_ASCII_WORDS).split()
        codes = np.frombuffer(data, dtype=np.uint8)
        joiner = _ASCII_JOINER[codes]
        clean = np.frombuffer(data.translate(_ASCII_CLEAN), dtype=np.uint8).copy()
        clean[joiner & ~_joined(codes, _ASCII_ALNUM[codes], joiner)] = _SPACE
        return clean.tobytes().split()
    try:
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    except UnicodeEncodeError:
        return [w.lower().encode("utf-8", "surrogatepass") for w in WORD_RE.findall(text)]
    alnum = _unicode_alnum()[points]
    joiner = np.isin(points, _JOINERS)
    keep = alnum | _joined(points, alnum, joiner)
    clean = np.where(keep, points, np.uint32(_SPACE)).astype("<u4")
    # Only alphanumerics, inner joiners and spaces are left; lower() never makes a space.
    return [w.encode("utf-8") for w in clean.tobytes().decode("utf-32-le").lower().split()]


def words_of(text: str) -> list[str]:
    """The words of ``text`` in order, lower-cased (used for shingling)."""
    return [m.group(0).lower() for m in WORD_RE.finditer(text or "")]
