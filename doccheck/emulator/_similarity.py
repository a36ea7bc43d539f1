"""Similarity computed for real: 5-word shingles against earlier submissions and references.

A document's words (lower-cased, see :func:`doccheck.extract.words_of`) are cut into
overlapping 5-word shingles. An inverted index maps each shingle to the sources that
contain it, so a comparison costs one dictionary lookup per shingle however large the
corpus grows. A word of the submission is *matched* when it lies in a shingle that also
occurs in a source; ``percent`` of a source and the overall ``score`` are matched words
over the submission's words, in 0..100. Repeated shingles of one submission are looked up
once, and a shingle credits at most :data:`MAX_POSTINGS` (the earliest) sources.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import islice
from typing import Any

SHINGLE = 5
MAX_SOURCES = 10
# A shingle found in very many sources is boilerplate (a shared prompt, a licence line):
# only its earliest MAX_POSTINGS sources are credited, so that one common phrase in 10,000
# submissions cannot make every comparison cost 10,000 steps per shingle.
MAX_POSTINGS = 50


@dataclass(frozen=True)
class SourceInfo:
    """A comparable work: a submission of the account or a bundled reference text."""

    source_id: str
    title: str
    url: str | None
    kind: str  # "submission" | "reference"
    seq: int  # creation order; a submission is only compared with strictly earlier ones


def shingle_hashes(words: list[str]) -> list[int]:
    """Hash of every run of :data:`SHINGLE` consecutive words, in order."""
    return [hash(tuple(words[i : i + SHINGLE])) for i in range(len(words) - SHINGLE + 1)]


class ShingleIndex:
    """Inverted index shingle → source ids, plus the sources' descriptions."""

    def __init__(self) -> None:
        self._postings: dict[int, list[str]] = defaultdict(list)
        self.sources: dict[str, SourceInfo] = {}

    def add(self, source: SourceInfo, words: list[str]) -> None:
        """Index ``words`` as ``source`` (each distinct shingle once)."""
        self.add_hashes(source, shingle_hashes(words))

    def add_hashes(self, source: SourceInfo, hashes: list[int]) -> None:
        """Index precomputed shingle hashes as ``source``."""
        self.sources[source.source_id] = source
        for h in set(hashes):
            self._postings[h].append(source.source_id)

    def postings(self, h: int) -> list[str]:
        return self._postings.get(h, [])


def compare(words: list[str], indexes: list[ShingleIndex], *, exclude: str, before_seq: int) -> dict[str, Any]:
    """The ``similarity`` result fields (without ``status``) for a submission's words."""
    return compare_hashes(shingle_hashes(words), len(words), indexes, exclude=exclude, before_seq=before_seq)


def compare_hashes(
    hashes: list[int], total: int, indexes: list[ShingleIndex], *, exclude: str, before_seq: int
) -> dict[str, Any]:
    """:func:`compare` on precomputed shingle hashes of a ``total``-word submission."""
    covered: dict[str, set[int]] = {}
    infos: dict[str, SourceInfo] = {}
    starts_by_hash: dict[int, list[int]] = defaultdict(list)
    for i, h in enumerate(hashes):
        starts_by_hash[h].append(i)
    for h, starts in starts_by_hash.items():
        words_of_shingle: set[int] | None = None
        for index in indexes:
            for sid in islice(index.postings(h), MAX_POSTINGS):
                info = index.sources[sid]
                if sid == exclude or (info.kind == "submission" and info.seq >= before_seq):
                    continue
                if words_of_shingle is None:
                    words_of_shingle = {i + k for i in starts for k in range(SHINGLE)}
                infos[sid] = info
                positions = covered.get(sid)
                if positions is None:
                    covered[sid] = set(words_of_shingle)
                else:
                    positions |= words_of_shingle
    union: set[int] = set()
    for positions in covered.values():
        union |= positions
    ranked = sorted(covered.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_SOURCES]
    sources = [
        {
            "source_id": sid,
            "title": infos[sid].title,
            "url": infos[sid].url,
            "kind": infos[sid].kind,
            "matched_words": len(pos),
            "percent": round(100.0 * len(pos) / total, 1) if total else 0.0,
        }
        for sid, pos in ranked
    ]
    score = round(100.0 * len(union) / total, 1) if total else 0.0
    return {"score": score, "matched_words": len(union), "sources": sources}
