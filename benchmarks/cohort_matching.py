"""Cohort matching: recall on planted pairs, time and peak memory vs corpus size; datasketch vs rensa.

Run:  .venv/bin/python benchmarks/cohort_matching.py [--sizes 2000,10000] [--compare 1000] [--store ledger]

Corpus: deterministic essays of ~500 words (tests/matching_corpus.py) with 1 % of the documents
in planted pairs of each kind (light edits, heavy edits, a copied quarter inside a three-times
longer essay, identical files), shuffled. Each size runs in a fresh interpreter:

- ``match``: wall and CPU time (the CPU time says what a busy shared machine hides) of the whole of ``doccheck.matching.match_cohort`` (shingling, signatures, storing them
  in a SQLite ledger, candidates, exact verification), corpus generation excluded;
- ``peak RSS growth``: highest RSS while matching (sampled every 5 ms from /proc) minus the RSS
  before it, the corpus texts already in memory;
- ``recall``: planted pairs found with their planted kind; ``false``: pairs found that were not planted.

``--compare N`` measures the two MinHash libraries on the same N documents' shingle sets: signing
time per document (datasketch's ``update_batch``, and its scheme computed on the array as doccheck
does since issue 10, checked equal), LSH time and peak memory (tracemalloc) of datasketch's ``MinHashLSH``, of the
numpy banding doccheck uses (same bands and rows) and of rensa's ``RMinHashLSH``, and the recall
of LSH alone (threshold 0.3) on the planted pairs, which shows why copied sections need the
containment index.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRss:
    """Samples RSS every 5 ms in a thread; ``growth`` is the peak minus the RSS at start."""

    def __enter__(self) -> PeakRss:
        self.start = rss_bytes()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_bytes())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())

    @property
    def growth(self) -> int:
        return self.peak - self.start


CHUNK = 5000


def _chunk(args: tuple[int, int, int]):  # type: ignore[no-untyped-def]
    from tests.matching_corpus import planted_corpus

    n, seed, k = args
    per_kind = max(1, n // 100 // 2)  # 1 % of the documents in pairs of each kind
    return planted_corpus(seed=seed * 1000 + k, unrelated=n - 8 * per_kind, per_kind=per_kind, prefix=f"c{k}-")


def corpus(n: int, seed: int = 1):  # type: ignore[no-untyped-def]
    """``n`` essays in chunks of 5,000 (pairs planted inside each chunk), both cores generating."""
    from concurrent.futures import ProcessPoolExecutor

    from tests.matching_corpus import PlantedCorpus

    sizes = [min(CHUNK, n - i) for i in range(0, n, CHUNK)]
    jobs = [(size, seed, k) for k, size in enumerate(sizes)]
    if len(jobs) == 1:
        parts = [_chunk(jobs[0])]
    else:
        with ProcessPoolExecutor(max_workers=2) as pool:
            parts = list(pool.map(_chunk, jobs))
    essays = [e for part in parts for e in part.essays]
    pairs = {pair: kind for part in parts for pair, kind in part.pairs.items()}
    return PlantedCorpus(essays, pairs)


def as_docs(c):  # type: ignore[no-untyped-def]
    return [
        SimpleNamespace(document_id=e.document_id, text=e.text, path=None,
                        content_hash=hashlib.sha256(e.text.encode()).hexdigest())
        for e in c.essays
    ]  # fmt: skip


def score(pairs: dict[frozenset[str], str], planted: dict[frozenset[str], str]) -> dict[str, object]:
    by_kind: dict[str, list[int]] = {}
    for pair, kind in planted.items():
        hit = pairs.get(pair) == kind
        by_kind.setdefault(kind, [0, 0])
        by_kind[kind][0] += int(hit)
        by_kind[kind][1] += 1
    found = sum(v[0] for v in by_kind.values())
    return {
        "recall": round(found / max(1, len(planted)), 4),
        "by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(by_kind.items())},
        "false": sum(1 for p in pairs if p not in planted),
    }


def one(n: int, store_kind: str) -> dict[str, object]:
    """One size in this interpreter (called in a subprocess by ``main``)."""
    from doccheck.ledger import Ledger
    from doccheck.matching import LedgerStore, MemoryStore, match_cohort

    t0 = time.perf_counter()
    c = corpus(n)
    docs = as_docs(c)
    generated = time.perf_counter() - t0
    words = sum(len(d.text.split()) for d in docs)
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger(f"sqlite:///{tmp}/ledger.db") if store_kind == "ledger" else None
        store = LedgerStore(ledger) if ledger else MemoryStore()
        with PeakRss() as mem:
            t1, c1 = time.perf_counter(), time.process_time()
            result = match_cohort(docs, campaign="bench", run_id="r1", store=store)
            elapsed, cpu = time.perf_counter() - t1, time.process_time() - c1
        db_bytes = os.path.getsize(f"{tmp}/ledger.db") if ledger else 0
        if ledger:
            ledger.close()
    pairs = {frozenset({p["document_id"], p["matched_document_id"]}): p["kind"] for p in result.pairs}
    return {
        "documents": n,
        "words": words,
        "generate_s": round(generated, 1),
        "match_s": round(elapsed, 2),
        "cpu_s": round(cpu, 2),
        "load": round(os.getloadavg()[0], 1),
        "docs_per_s": round(n / elapsed),
        "peak_rss_growth_mib": round(mem.growth / 2**20, 1),
        "ledger_mib": round(db_bytes / 2**20, 1),
        "candidates": result.candidates,
        "pairs": len(result.pairs),
        **score(pairs, c.pairs),
    }


def compare(n: int) -> dict[str, object]:
    """datasketch vs rensa on the same shingle sets: signing time, LSH-only recall."""
    import numpy as np
    import rensa
    from datasketch import LeanMinHash, MinHashLSH

    # an instrument: it measures the matcher's own signing against datasketch's, inside the package
    from doccheck.matching import _minhash as minhash
    from doccheck.matching._shingles import WordHasher, shingle_hashes, to_u32

    c = corpus(n, seed=2)
    hasher = WordHasher()
    ids = [e.document_id for e in c.essays]
    sets = [to_u32(shingle_hashes(e.text, hasher)) for e in c.essays]
    index = {d: i for i, d in enumerate(ids)}
    planted = {tuple(sorted(index[d] for d in pair)): kind for pair, kind in c.pairs.items() if kind != "identical"}

    def lsh_recall(cands: set[tuple[int, int]]) -> dict[str, str]:
        out: dict[str, list[int]] = {}
        for pair, kind in planted.items():
            out.setdefault(kind, [0, 0])
            out[kind][0] += int(pair in cands)
            out[kind][1] += 1
        return {k: f"{v[0]}/{v[1]}" for k, v in sorted(out.items())}

    t = time.perf_counter()
    sigs = np.vstack([minhash.reference_signature(s) for s in sets])  # datasketch's own update_batch
    ds_sign = time.perf_counter() - t
    t = time.perf_counter()
    ours = np.vstack([minhash.signature(s) for s in sets])  # its scheme, computed on the array (issue 10)
    own_sign = time.perf_counter() - t
    assert (ours == sigs).all(), "doccheck's signatures differ from datasketch's"
    import tracemalloc

    tracemalloc.start()
    t = time.perf_counter()
    lsh = MinHashLSH(threshold=0.3, num_perm=minhash.NUM_PERM, weights=(0.2, 0.8))
    sketches = [LeanMinHash(seed=minhash.SEED, hashvalues=s, scheme=minhash.SCHEME) for s in sigs]
    for i, sk in enumerate(sketches):
        lsh.insert(i, sk, check_duplication=False)
    ds_cands = {(min(i, j), max(i, j)) for i, sk in enumerate(sketches) for j in lsh.query(sk) if j != i}
    ds_lsh = time.perf_counter() - t
    ds_peak = tracemalloc.get_traced_memory()[1]
    del lsh, sketches
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t = time.perf_counter()
    np_cands = minhash.lsh_pairs(sigs, range(n), threshold=0.3)
    np_lsh = time.perf_counter() - t
    np_peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()

    t = time.perf_counter()
    flat = np.concatenate(sets).astype(np.uint64)
    offsets = np.zeros(len(sets) + 1, dtype=np.uint64)
    offsets[1:] = np.cumsum([len(s) for s in sets])
    rensa.RMinHash.digest_matrix_from_flat_token_hashes(flat, offsets, minhash.NUM_PERM, minhash.SEED)
    rs_sign = time.perf_counter() - t
    # rensa's LSH takes RMinHash objects (string/bytes tokens): sign those for the index.
    t = time.perf_counter()
    objs = rensa.RMinHash.from_token_sets([[v.tobytes() for v in s] for s in sets], minhash.NUM_PERM, minhash.SEED)
    rs_obj = time.perf_counter() - t
    t = time.perf_counter()
    bands = 32  # rensa takes the band count; 32 × 4 rows ≈ threshold 0.3 on 128 permutations
    rl = rensa.RMinHashLSH(0.3, minhash.NUM_PERM, bands)
    for i, m in enumerate(objs):
        rl.insert(i, m)
    rs_cands = {(min(i, j), max(i, j)) for i, m in enumerate(objs) for j in rl.query(m) if j != i}
    rs_lsh = time.perf_counter() - t
    return {
        "documents": n,
        "datasketch": {"sign_us_per_doc": round(ds_sign / n * 1e6), "lsh_s": round(ds_lsh, 2),
                       "lsh_candidates": len(ds_cands), "lsh_only_recall": lsh_recall(ds_cands),
                       "lsh_peak_mib": round(ds_peak / 2**20, 1),
                       "restore_from_stored_signature": "yes (LeanMinHash(hashvalues=..., scheme=...))"},
        "datasketch's scheme on arrays (used)": {"sign_us_per_doc": round(own_sign / n * 1e6), "equal": True},
        "numpy banding (used)": {"bands_rows": minhash.band_params(0.3, minhash.NUM_PERM), "lsh_s": round(np_lsh, 2),
                                 "lsh_candidates": len(np_cands), "lsh_only_recall": lsh_recall(np_cands),
                                 "lsh_peak_mib": round(np_peak / 2**20, 1)},
        "rensa": {"sign_us_per_doc_int_matrix": round(rs_sign / n * 1e6),
                  "sign_us_per_doc_objects": round(rs_obj / n * 1e6), "lsh_s": round(rs_lsh, 2),
                  "lsh_candidates": len(rs_cands), "lsh_only_recall": lsh_recall(rs_cands),
                  "restore_from_stored_signature": "no (RMinHash has no constructor from a digest)"},
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000", help="comma-separated corpus sizes (documents)")
    parser.add_argument("--compare", type=int, default=1000, help="documents for the library comparison (0: skip)")
    parser.add_argument("--store", choices=["ledger", "memory"], default="ledger")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--compare-only", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.store)))
        return
    if args.compare_only:
        print(json.dumps(compare(args.compare_only)))
        return
    print(f"cohort matching benchmark ({os.cpu_count()} cores, store={args.store})", flush=True)
    if args.compare:
        out = subprocess.run([sys.executable, __file__, "--compare-only", str(args.compare)], capture_output=True,
                             text=True, check=True, cwd=ROOT)  # fmt: skip
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"\nlibraries on {figures['documents']} documents (same shingle sets, 128 permutations):")
        for lib in ("datasketch", "datasketch's scheme on arrays (used)", "numpy banding (used)", "rensa"):
            print(f"  {lib}: " + ", ".join(f"{k}={v}" for k, v in figures[lib].items()), flush=True)
    print("\nmatch_cohort (corpus generation excluded):")
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        out = subprocess.run([sys.executable, __file__, "--one", str(size), "--store", args.store],
                             capture_output=True, text=True, cwd=ROOT)  # fmt: skip
        if out.returncode != 0:
            print(f"  {size}: failed\n{out.stderr[-2000:]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"  {r['documents']:>7,} docs ({r['words']:,} words): match {r['match_s']} s wall, {r['cpu_s']} s CPU "
            f"({r['docs_per_s']:,} docs/s; load average {r['load']}), "
            f"peak RSS growth {r['peak_rss_growth_mib']} MiB, ledger {r['ledger_mib']} MiB, "
            f"candidates {r['candidates']:,}, pairs {r['pairs']}, recall {r['recall']} {r['by_kind']}, "
            f"false pairs {r['false']}  [generation {r['generate_s']} s]",
            flush=True,
        )


if __name__ == "__main__":
    main()
