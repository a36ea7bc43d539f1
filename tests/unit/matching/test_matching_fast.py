"""The matcher's fast paths (issue 10) give exactly what the reference functions give.

Stored signatures and shingle sets must compare across runs and versions, so the numpy
shingling and signing must equal the definitions: ``to_u32(shingle_hashes(text))`` and
datasketch's own ``MinHash.update_batch``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from doccheck.matching import _minhash as minhash
from doccheck.matching._block_signatures import sign_block
from doccheck.matching._shingles import (
    WordHasher,
    document_shingles,
    remove,
    sampled,
    shingle_hashes,
    to_u32,
    words_for_matching,
)

WORDS = st.sampled_from(["the", "The", "cat", "don't", "well-known", "naïve", "ΟΔΟΣ", "日本", "--", "_x", "42", "a’b"])
TEXTS = st.one_of(
    st.lists(WORDS, max_size=60).map(" ".join),
    st.text(max_size=200),
)


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_document_shingles_equal_the_reference(text: str) -> None:
    hasher = WordHasher()
    words, u32 = document_shingles(text, hasher)
    assert words == len(words_for_matching(text))
    assert u32.dtype == np.uint32
    assert u32.tolist() == to_u32(shingle_hashes(text)).tolist()
    assert document_shingles(text, hasher)[1].tolist() == u32.tolist()  # the cache changes nothing


def test_document_shingles_golden_value_and_a_full_cache() -> None:
    assert int(document_shingles("the cat sat on the mat", WordHasher())[1][0]) == 2186977580  # never change
    tiny = WordHasher(max_cache=2)  # words past the cap are hashed every time, never kept
    text = "one two three four five six seven eight"
    assert document_shingles(text, tiny)[1].tolist() == to_u32(shingle_hashes(text)).tolist()
    assert len(tiny._cache) == 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), max_size=600, unique=True))
def test_signature_equals_datasketch_update_batch(values: list[int]) -> None:
    u32 = np.array(sorted(values), dtype=np.uint32)
    assert minhash.signature(u32).tolist() == minhash.reference_signature(u32).tolist()
    assert minhash.signature(u32, 64).tolist() == minhash.reference_signature(u32, 64).tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXTS, max_size=12), st.booleans())
def test_sign_block_equals_signing_one_document_at_a_time(texts: list[str], with_template: bool) -> None:
    hasher = WordHasher()
    template = to_u32(shingle_hashes("the cat don't well-known the cat naïve 42")) if with_template else _EMPTY
    signed = sign_block(texts, hasher, template)
    assert len(signed) == len(texts)
    for text, one in zip(texts, signed, strict=True):
        words, u32 = document_shingles(text, WordHasher())
        u32 = remove(u32, [template])
        assert one.words == words
        assert one.shingles.tolist() == u32.tolist()
        assert one.signature.tolist() == minhash.reference_signature(u32).tolist()
        assert one.sample.tolist() == sampled(u32).tolist()


def test_sign_block_spans_several_signature_runs() -> None:
    texts = [" ".join(f"w{i}x{j}" for j in range(i % 700)) for i in range(60)]  # ~21,000 shingles, empty ones too
    for text, one in zip(texts, sign_block(texts, WordHasher(), _EMPTY), strict=True):
        assert one.signature.tolist() == minhash.reference_signature(document_shingles(text, WordHasher())[1]).tolist()


_EMPTY = np.empty(0, dtype=np.uint32)


def test_digest_set_holds_what_was_added_across_merges() -> None:
    import hashlib

    from doccheck.matching._cohort_columns import DigestSet

    digests = [hashlib.blake2b(str(i).encode(), digest_size=16).digest() for i in range(1000)]
    ds = DigestSet(merge_every=64)
    for d in digests[:500]:
        ds.add(d)
    ds.add(digests[0])  # again: still one entry
    assert len(ds) == 500
    assert all(d in ds for d in digests[:500]) and not any(d in ds for d in digests[500:])
    assert b"short" not in ds and "text" not in ds


def test_digest_set_looks_up_many_as_one_at_a_time() -> None:
    """``contains_many`` and ``update`` agree with ``in`` and ``add``, across merges and for digests
    that share their first half (the sorted column then holds a run of equal values)."""
    import hashlib

    from doccheck.matching._cohort_columns import DigestSet

    digests = [hashlib.blake2b(str(i).encode(), digest_size=16).digest() for i in range(1000)]
    twins = [digests[7][:8] + bytes([i]) * 8 for i in range(4)]  # same first half as digests[7]
    ds = DigestSet(merge_every=64)
    ds.update([*digests[:500], digests[3], *twins[:2]])  # a repeat is one entry
    assert len(ds) == 502
    query = [*digests, *twins, digests[0][:8] + b"\0" * 8]
    assert ds.contains_many(query) == [d in ds for d in query]
    assert ds.contains_many(query) == [d in {*digests[:500], *twins[:2]} for d in query]
    assert DigestSet().contains_many(digests[:3]) == [False] * 3 and ds.contains_many([]) == []


def test_permutations_and_band_params_are_datasketchs_own() -> None:
    from datasketch import MinHash, MinHashLSH

    for num_perm in (64, 128, 256):
        a, b = minhash._affine(num_perm)
        theirs = MinHash(num_perm=num_perm, seed=minhash.SEED, scheme=minhash.SCHEME).permutations
        assert a.tolist() == theirs[0].tolist() and b.tolist() == theirs[1].tolist()
    for (threshold, num_perm, weights), params in minhash.KNOWN_BAND_PARAMS.items():
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
        assert params == (lsh.b, lsh.r)


def test_matching_does_not_import_datasketch() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from doccheck.matching._cohort import match_cohort; from doccheck.matching._signature_store import MemoryStore\n"
        "class D:\n  def __init__(s, i, t): s.document_id, s.content_hash, s.text = i, i, t\n"
        "t = ' '.join(f'w{i}' for i in range(60))\n"
        "r = match_cohort([D('a', t), D('b', t + ' more')], campaign='c', run_id='r')\n"
        "print(len(r.pairs), 'datasketch' in sys.modules, 'scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["1", "False", "False"]


def test_a_long_document_is_signed_in_slices_with_the_same_result() -> None:
    rng = np.random.default_rng(5)
    long_one = np.unique(rng.integers(0, 2**32, 3 * minhash.SIGN_VALUES + 17, dtype=np.uint64).astype(np.uint32))
    short = long_one[:40]
    assert minhash.signature(long_one).tolist() == minhash.reference_signature(long_one).tolist()
    values = np.concatenate([short, long_one, short])
    bounds = np.array([0, len(short), len(short), len(short) + len(long_one), len(values)])
    got = minhash.range_signatures(values, bounds)
    assert got[0].tolist() == got[3].tolist() == minhash.reference_signature(short).tolist()
    assert got[1].tolist() == [0xFFFFFFFF] * minhash.NUM_PERM  # an empty range
    assert got[2].tolist() == minhash.reference_signature(long_one).tolist()


def test_matching_memory_is_flat_in_the_number_of_documents() -> None:
    """What the matcher holds per document is a few columns, not the documents (issue 10)."""
    import random
    import tracemalloc

    from doccheck.matching._cohort import match_cohort
    from doccheck.matching._spill import SpillStore

    vocabulary = [f"w{i}" for i in range(3000)]

    class Row:
        def __init__(self, i: int, text: str) -> None:
            self.document_id, self.content_hash, self.text, self.path = f"student-{i:06d}", f"h{i}", text, None

    def peak(n: int) -> int:
        rnd = random.Random(3)
        rows = (Row(i, " ".join(rnd.choices(vocabulary, k=60))) for i in range(n))
        store = SpillStore()
        tracemalloc.start()
        try:
            result = match_cohort(rows, campaign="term", run_id="r", store=store)
            assert result.documents == n
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            store.close()

    small, large = peak(2_000), peak(8_000)
    assert large < 1.5 * small, (small, large)
