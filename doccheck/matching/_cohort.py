"""Cohort matching: every near-duplicate pair of a campaign's documents, before anything is paid.

The service compares a document only with what it had indexed before, so a cohort sent in
one run is never compared with itself. This module does that comparison locally:

1. each new document → distinct 5-word shingles (32-bit hashes) minus named template text
   → MinHash signature + hash-sampled shingles, stored (:mod:`doccheck.matching._signature_store`);
   documents of earlier runs come back from the store as signatures and samples only;
2. identical documents: same content hash (they share one check at the service);
3. candidates: MinHash LSH (Jaccard) ∪ the sampled-shingle index (containment);
4. verification: EXACT overlap of the two stored shingle sets, after removing boilerplate
   (shingles found in more than ``max_df`` documents of the campaign);
5. kind: ``near_duplicate`` when Jaccard ≥ ``min_jaccard`` or the overlap covers ≥ ``min_both``
   of each side, else ``copied_section`` when it covers ≥ ``min_containment`` of one side.

Memory: ~60 bytes of columns per document of the campaign (:mod:`doccheck.matching._cohort_columns`;
band keys, ids and samples wait in temporary files); full shingle sets only for the documents
of candidate pairs, and a streamed count for boilerplate. New documents are signed 128 at a
time (:mod:`doccheck.matching._block_signatures`).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import doccheck.extract as extraction
from doccheck.domain import document_owner
from doccheck.extract import cache as word_cache
from doccheck.matching import _minhash as minhash
from doccheck.matching._block_signatures import BLOCK, sign_block
from doccheck.matching._cohort_columns import CampaignColumns, DigestSet
from doccheck.matching._shingles import (
    SAMPLE_MOD,
    SHINGLE,
    WordHasher,
    pack_u32,
    shingle_hashes,
    to_u32,
    unpack_u32,
)
from doccheck.matching._signature_store import MemoryStore, SignatureStore
from doccheck.storage import UserPath, display, read_bounded, resolve

__all__ = ["KINDS", "CohortResult", "MatchOptions", "match_cohort", "scheme_name", "template_shingles"]

KINDS = ("identical", "near_duplicate", "copied_section")
#: Documents whose identities are looked up together (a few array operations a chunk).
LOOKUP_CHUNK = 512
#: Largest file read for matching (the manifest refuses bigger ones anyway: the upload limit).
MAX_FILE_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True)
class MatchOptions:
    """Thresholds of cohort matching (defaults measured in benchmarks/cohort_matching.py).

    ``template_files`` / ``template_texts``: text every student was given (a prompt, a
    template); their shingles are removed from every document before anything else.
    A pair is a ``near_duplicate`` when its Jaccard is at least ``min_jaccard`` or the overlap
    covers ``min_both`` of each side (a heavily edited whole document); else a
    ``copied_section`` when it covers ``min_containment`` of one side (and ``min_shared`` shingles).
    ``max_postings``: a sampled shingle in more documents than this proposes no candidates
    (pairs generated per shingle grow with its square; LSH still proposes near-duplicates).
    ``max_df``: a shingle in more documents than this is boilerplate (default
    ``max(10, 2% of the campaign)``), so an unnamed template pairs nobody.
    """

    min_jaccard: float = 0.3
    min_containment: float = 0.15
    min_both: float = 0.4
    min_shared: int = 15
    lsh_threshold: float = 0.3
    min_sampled_shared: int = 3
    max_postings: int = 50
    max_df: int | None = None
    num_perm: int = minhash.NUM_PERM
    template_files: tuple[str, ...] = ()
    template_texts: tuple[str, ...] = ()

    def df_limit(self, documents: int) -> int:
        """The boilerplate cut-off for a campaign of ``documents`` documents."""
        if self.max_df is not None:
            return max(1, int(self.max_df))
        return max(10, math.ceil(0.02 * documents))


def scheme_name(options: MatchOptions) -> str:
    """Names everything that makes two stored signatures comparable (changed → recomputed)."""
    return f"w{SHINGLE}-u32-m{SAMPLE_MOD}-ds-{minhash.SCHEME}-p{options.num_perm}-s{minhash.SEED}"


@dataclass
class CohortResult:
    """The verified pairs (report rows) and what matching saw."""

    pairs: list[dict[str, Any]] = field(default_factory=list)
    documents: int = 0  # documents of this run that were matched
    earlier_documents: int = 0  # documents of earlier runs compared from stored signatures
    candidates: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)  # document_id, reason
    elapsed_seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        """Pairs per kind, every kind present."""
        out = dict.fromkeys(KINDS, 0)
        for pair in self.pairs:
            out[pair["kind"]] += 1
        return out

    def top(self, n: int = 20) -> list[dict[str, Any]]:
        """The strongest pairs first (identical, then by the larger overlap)."""
        rank = {kind: i for i, kind in enumerate(KINDS)}
        return sorted(
            self.pairs,
            key=lambda p: (rank[p["kind"]], -max(p["percent"] or 0, p["matched_percent"] or 0), p["document_id"]),
        )[:n]

    def summary(self) -> dict[str, Any]:
        """Counts for run summaries (no texts, no paths)."""
        return {
            "pairs": len(self.pairs),
            **self.counts(),
            "documents": self.documents,
            "earlier_documents": self.earlier_documents,
            "skipped": len(self.skipped),
        }


def template_shingles(options: MatchOptions) -> np.ndarray:
    """The 32-bit shingles of every named template (files read as documents are)."""
    parts: list[np.ndarray] = []
    for text in options.template_texts:
        parts.append(to_u32(shingle_hashes(text)))
    for name in options.template_files:
        try:
            path = resolve(name)
            text = extraction.extract_text(_bytes_of(path), path.name)
        except (OSError, ValueError) as exc:
            raise ValueError(f"template file {display(name)!r} cannot be read: {exc}") from None
        parts.append(to_u32(shingle_hashes(text)))
    return np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.uint32)


def _text_of(doc: Any) -> str:
    """The text a document's row stands for (its text, or its file's extracted text: the one the
    word count was taken from when this process just extracted it, else read again)."""
    text = getattr(doc, "text", None)
    if text is not None:
        return str(text)
    path = getattr(doc, "path", None)
    if path is None:
        raise ValueError("the row has neither text nor a file")
    digest = getattr(doc, "content_hash", None)
    handed = word_cache.take_text(str(digest)) if digest else None
    if handed is not None:
        return handed
    path = resolve(path)  # a UserPath, or the location as display() wrote it (the background process)
    # The package's function, looked up when called: tests count the files read by patching it.
    return extraction.extract_text(_bytes_of(path, getattr(doc, "size_bytes", None)), path.name)


def _bytes_of(path: UserPath, size: int | None = None) -> bytes:
    """A file's bytes, refused past :data:`MAX_FILE_BYTES` (a store's file: one bounded GET; with
    the size planning recorded, no HEAD before it)."""
    if isinstance(path, Path):
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"the file is over {MAX_FILE_BYTES} bytes")
        return path.read_bytes()
    return read_bounded(path, max_bytes=MAX_FILE_BYTES, size=size if isinstance(size, int) else None)


def match_cohort(
    documents: Iterable[Any],
    *,
    campaign: str,
    run_id: str,
    store: SignatureStore | None = None,
    options: MatchOptions | None = None,
) -> CohortResult:
    """Match this run's ``documents`` with each other and with the campaign's stored ones.

    ``documents`` are planned manifest rows (anything with ``document_id``, ``content_hash``
    and ``text`` or ``path``). A row whose text cannot be read is listed in ``skipped`` with
    the reason; it never stops the others. New signatures are added to ``store`` (a
    :class:`MemoryStore` when None: nothing is written).
    """
    started = time.monotonic()
    options = options or MatchOptions()
    store = store if store is not None else MemoryStore()
    scheme = scheme_name(options)
    result = CohortResult()

    # 1. sign the new documents; the run's documents already stored are reused as they are.
    this_run = _sign_new_documents(documents, store, campaign, run_id, scheme, options, result)

    # 2. load signatures and samples of the whole campaign (this run's and earlier ones) into
    #    compact columns: band keys in memory, samples spilled to disk, signatures dropped.
    bands, rows = minhash.band_params(options.lsh_threshold, options.num_perm)
    docs = CampaignColumns(options.num_perm, bands, rows)
    try:
        stored = iter(store.signatures(campaign, scheme))
        while chunk := list(itertools.islice(stored, LOOKUP_CHUNK)):
            ours = this_run.contains_many([_key_digest(row[1], row[2]) for row in chunk])
            for (row_id, document_id, content_hash, first_run, words_n, size, sig, sample), mine in zip(
                chunk, ours, strict=True
            ):
                docs.add(row_id, document_id, content_hash, first_run, words_n, size, sig, sample, mine)
        current = docs.finish()
        n = len(docs)
        result.documents = int(current.sum())
        result.earlier_documents = n - result.documents

        # 3. identical documents: same content hash under different document ids.
        pairs = _identical_pairs(docs, current)

        # 4. candidates: LSH on the band keys ∪ shared sampled shingles.
        max_df = options.df_limit(n)
        by_band = minhash.key_pairs(docs.band_columns(), current) if n >= 2 else set()
        by_sample, frequent_samples = docs.samples.pairs(
            current, max_df=max_df, min_shared=options.min_sampled_shared,
            max_postings=min(max_df, options.max_postings),
        )  # fmt: skip
        names = {k: docs.document_id(k) for pair in (*pairs, *by_band, *by_sample) for k in pair}
    finally:
        docs.close()
    candidates = {
        (i, j) for (i, j) in by_band | by_sample
        if (i, j) not in pairs and document_owner(names[i]) != document_owner(names[j]) and (current[i] or current[j])
    }  # fmt: skip

    # 5. exact verification from the stored shingle sets.
    sets = _verified_sets(candidates, by_sample, docs, store, options, bands, rows)
    result.candidates = len(candidates)
    if candidates:
        frequent_of = _Boilerplate(store, campaign, scheme, frequent_samples, max_df)
        pairs.update(_classified_pairs(candidates, sets, frequent_of, options))

    # 6. report rows, this run's document first.
    result.pairs.extend(_report_rows(pairs, docs, current, names))
    result.elapsed_seconds = round(time.monotonic() - started, 3)
    return result


def _sign_new_documents(
    documents: Iterable[Any],
    store: SignatureStore,
    campaign: str,
    run_id: str,
    scheme: str,
    options: MatchOptions,
    result: CohortResult,
) -> DigestSet:
    """Sign and store the documents the campaign has not seen; return this run's identities.

    Documents are signed a block at a time and stored 500 rows at a time; an unreadable one is
    listed in ``result.skipped`` with its reason.
    """
    template = template_shingles(options)
    known = DigestSet()
    known.update(_key_digest(*stored_key) for stored_key in store.keys(campaign, scheme))
    this_run = DigestSet()  # (document_id, content_hash) of this run's documents, 16 bytes each
    hasher = WordHasher()
    pending: list[dict[str, Any]] = []
    block: list[tuple[tuple[str, str], str]] = []  # (key, text) waiting to be signed together
    for doc, key in _unseen(documents, this_run, known):
        try:
            text = _text_of(doc)
        except Exception as exc:  # noqa: BLE001 - one unreadable row never sinks the batch
            result.skipped.append({"document_id": key[0], "reason": f"document {key[0]!r}: cannot read text: {exc}"})
            continue
        block.append((key, text))
        if len(block) >= BLOCK:
            pending += _rows_of(block, hasher, template, options.num_perm, campaign, run_id, scheme)
            block = []
        if len(pending) >= 500:
            store.add(pending)
            pending = []
    pending += _rows_of(block, hasher, template, options.num_perm, campaign, run_id, scheme)
    store.add(pending)
    return this_run


def _unseen(documents: Iterable[Any], this_run: DigestSet, known: DigestSet) -> Iterator[tuple[Any, tuple[str, str]]]:
    """The documents whose (id, content hash) is new to this run and to the campaign, with it;
    every document's identity is added to ``this_run``. Looked up :data:`LOOKUP_CHUNK` at a time."""
    it = iter(documents)
    while chunk := list(itertools.islice(it, LOOKUP_CHUNK)):
        keys = [(str(doc.document_id), str(doc.content_hash)) for doc in chunk]
        digests = [_key_digest(*key) for key in keys]
        fresh: list[int] = []
        added: set[bytes] = set()  # twice in this chunk
        for i, in_run in enumerate(this_run.contains_many(digests)):
            if not in_run and digests[i] not in added:
                added.add(digests[i])
                this_run.add_absent(digests[i])
                fresh.append(i)
        for i, was_known in zip(fresh, known.contains_many([digests[i] for i in fresh]), strict=True):
            if not was_known:
                yield chunk[i], keys[i]


def _identical_pairs(docs: CampaignColumns, current: np.ndarray) -> dict[tuple[int, int], dict[str, Any]]:
    """Pairs of documents with the same content hash under different ids, one of them this run's."""
    pairs: dict[tuple[int, int], dict[str, Any]] = {}
    for group in docs.identical_groups():
        for a in range(len(group)):
            for b in range(a + 1, len(group)):
                i, j = group[a], group[b]
                if (current[i] or current[j]) and document_owner(docs.document_id(i)) != document_owner(
                    docs.document_id(j)
                ):
                    pairs[(i, j)] = {"kind": "identical", "shared": docs.sizes[i], "ci": 1.0, "cj": 1.0, "jac": 1.0}
    return pairs


def _verified_sets(
    candidates: set[tuple[int, int]],
    by_sample: set[tuple[int, int]],
    docs: CampaignColumns,
    store: SignatureStore,
    options: MatchOptions,
    bands: int,
    rows: int,
) -> dict[int, np.ndarray]:
    """The stored shingle sets of the candidates' documents; drops band candidates found by chance.

    A band key shared by chance (32 bits) is no candidate: the signatures, recomputed from the
    stored sets they were computed from, must agree on a whole band. ``candidates`` is pruned
    in place.
    """
    if not candidates:
        return {}
    involved = sorted({k for pair in candidates for k in pair})
    stored = store.shingles([docs.row_ids[k] for k in involved])
    sets = {k: unpack_u32(stored.get(docs.row_ids[k])) for k in involved}
    del stored
    signatures: dict[int, np.ndarray] = {}
    for i, j in [pair for pair in candidates if pair not in by_sample]:
        for k in (i, j):
            if k not in signatures:
                signatures[k] = minhash.signature(sets[k], options.num_perm)
        if not minhash.bands_agree(signatures[i], signatures[j], bands, rows):
            candidates.discard((i, j))
    return sets


@dataclass(frozen=True)
class _Boilerplate:
    """What :func:`_boilerplate` needs besides the overlaps: the store and the campaign's limits."""

    store: SignatureStore
    campaign: str
    scheme: str
    frequent_samples: np.ndarray
    max_df: int

    def of(self, intersections: Iterable[np.ndarray]) -> np.ndarray:
        return _boilerplate(self.store, self.campaign, self.scheme, intersections, self.frequent_samples, self.max_df)


def _classified_pairs(
    candidates: set[tuple[int, int]],
    sets: dict[int, np.ndarray],
    boilerplate: _Boilerplate,
    options: MatchOptions,
) -> dict[tuple[int, int], dict[str, Any]]:
    """The verified candidates that match, by their exact overlap without boilerplate, with their kind."""
    inter = {pair: np.intersect1d(sets[pair[0]], sets[pair[1]], assume_unique=True) for pair in candidates}
    frequent = boilerplate.of(inter.values())
    own = {k: len(s) - (int(np.isin(s, frequent, assume_unique=True).sum()) if len(frequent) else 0)
           for k, s in sets.items()}  # fmt: skip
    pairs: dict[tuple[int, int], dict[str, Any]] = {}
    for (i, j), shared_set in inter.items():
        if len(frequent):
            shared_set = shared_set[~np.isin(shared_set, frequent, assume_unique=True)]
        shared = int(len(shared_set))
        if shared < options.min_shared:
            continue
        ci = shared / max(own[i], 1)
        cj = shared / max(own[j], 1)
        jac = shared / max(own[i] + own[j] - shared, 1)
        if jac >= options.min_jaccard or min(ci, cj) >= options.min_both:
            kind = "near_duplicate"
        elif max(ci, cj) >= options.min_containment:
            kind = "copied_section"
        else:
            continue
        pairs[(i, j)] = {"kind": kind, "shared": shared, "ci": ci, "cj": cj, "jac": jac}
    return pairs


def _report_rows(
    pairs: dict[tuple[int, int], dict[str, Any]],
    docs: CampaignColumns,
    current: np.ndarray,
    names: dict[int, str],
) -> list[dict[str, Any]]:
    """One row per matching pair, in pair order, with this run's document first."""
    out: list[dict[str, Any]] = []
    for (i, j), m in sorted(pairs.items()):
        if not current[i]:
            i, j = j, i
            m = {**m, "ci": m["cj"], "cj": m["ci"]}
        matched_words = (
            docs.words[i] if m["kind"] == "identical" else min(m["shared"] + SHINGLE - 1, docs.words[i], docs.words[j])
        )
        out.append(
            {
                "document_id": names[i],
                "matched_document_id": names[j],
                "kind": m["kind"],
                "percent": round(100.0 * min(m["ci"], 1.0), 1),
                "matched_percent": round(100.0 * min(m["cj"], 1.0), 1),
                "matched_words": int(matched_words),
                "jaccard": round(float(m["jac"]), 3),
                "matched_run_id": None if current[j] else docs.run_of(j),
            }
        )
    return out


def _rows_of(
    block: list[tuple[tuple[str, str], str]],
    hasher: WordHasher,
    template: np.ndarray,
    num_perm: int,
    campaign: str,
    run_id: str,
    scheme: str,
) -> list[dict[str, Any]]:
    """The stored rows of a block of documents ((document_id, content_hash), text), signed together."""
    if not block:
        return []
    signed = sign_block([text for _, text in block], hasher, template, num_perm)
    return [
        {
            "campaign": campaign,
            "document_id": document_id,
            "content_hash": content_hash,
            "run_id": run_id,
            "scheme": scheme,
            "words": one.words,
            "shingle_count": int(len(one.shingles)),
            "signature": pack_u32(one.signature),
            "sample": pack_u32(one.sample),
            "shingles": pack_u32(one.shingles),
        }
        for ((document_id, content_hash), _), one in zip(block, signed, strict=True)
    ]


def _key_digest(document_id: str, content_hash: str) -> bytes:
    """A document's identity in 16 bytes (instead of a tuple holding both strings alive)."""
    data = f"{len(document_id)}:{document_id}{content_hash}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest()


def _boilerplate(
    store: SignatureStore,
    campaign: str,
    scheme: str,
    intersections: Iterable[np.ndarray],
    frequent_samples: np.ndarray,
    max_df: int,
) -> np.ndarray:
    """Shingles of the candidate overlaps found in more than ``max_df`` documents.

    Only shingles that some candidate pair shares can matter, so only those are counted,
    in one streamed pass over the stored sets (one page of sets in memory at a time).
    """
    parts = [s for s in intersections if len(s)]
    if not parts:
        return frequent_samples
    suspects = np.unique(np.concatenate(parts))
    if len(suspects) == 0:
        return frequent_samples
    counts = np.zeros(len(suspects), dtype=np.int64)
    page: list[np.ndarray] = []

    def count(page: list[np.ndarray]) -> None:
        values = np.concatenate(page)  # each set is distinct, so a hit counts one document
        hit = values[np.isin(values, suspects)]
        np.add.at(counts, np.searchsorted(suspects, hit), 1)

    for _row_id, data in store.iter_shingles(campaign, scheme):
        page.append(unpack_u32(data))
        if len(page) >= 1000:
            count(page)
            page = []
    if page:
        count(page)
    return np.union1d(suspects[counts > max_df], frequent_samples).astype(np.uint32)
