"""Files are extracted once (issue 28): by the SHA-256 of their bytes, per campaign, in the ledger.

A recorded run extracts each distinct file once, before its rows are read (on every worker),
the batch re-read and the weekly rerun extract nothing, a changed file is extracted again,
the counts are the ones a fresh extraction gives, and purging the campaign removes them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from doccheck.extract import Extracted, count_words, extract, extract_text
from doccheck.extract import cache as word_cache
from doccheck.ledger import ExtractedWordsRow, Ledger, LedgerWordStore, execute_purge, plan_purge
from doccheck.pipeline import load_plan, read_batch, record_plan
from doccheck.pipeline.planning._plan_stream import file_paths
from tests.hostile_documents import docx_package, para


@pytest.fixture
def extracted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the files extracted (by the prefetch or by the manifest reader)."""
    names: list[str] = []

    def counting(data: bytes, filename: str, *args: Any, **kwargs: Any) -> Extracted:
        names.append(filename)
        return extract(data, filename, *args, **kwargs)

    def counting_text(data: bytes, filename: str, *args: Any, **kwargs: Any) -> str:
        return counting(data, filename, *args, **kwargs).text

    monkeypatch.setattr(word_cache, "extract", counting)
    monkeypatch.setattr("doccheck.extract.extract", counting)  # the manifest reader's reads
    monkeypatch.setattr("doccheck.extract.extract_text", counting_text)  # cohort matching's
    yield names


def _term(folder: Path) -> Path:
    (folder / "docs").mkdir(parents=True)
    for name, words in (("a", "alpha beta gamma"), ("b", "one two three four five"), ("c", "alpha beta gamma")):
        (folder / "docs" / f"{name}.docx").write_bytes(docx_package(para(f"essay {name}: {words}")))
    (folder / "docs" / "same-as-a.docx").write_bytes((folder / "docs" / "a.docx").read_bytes())
    manifest = folder / "term.csv"
    manifest.write_text(
        "document_id,path\nd1,docs/a.docx\nd2,docs/b.docx\nd3,docs/same-as-a.docx\nd4,docs/c.docx\n"
        "d5,../outside.docx\nd6,docs/missing.docx\n",
        encoding="utf-8",
    )
    (folder / "outside.docx").write_bytes(docx_package(para("outside the manifest's folder")))
    return manifest


def test_files_are_extracted_once_and_never_again_while_their_bytes_stay(tmp_path: Path, extracted: list[str]) -> None:
    manifest = _term(tmp_path / "term")
    expected = {d.document_id: d.words for d in load_plan(manifest, campaign="t").documents}
    extracted.clear()
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        first = record_plan(ledger, manifest, campaign="t", batch_size=2)
        # the prefetch: a, b, c (same-as-a has a's bytes; outside and missing are the reader's to refuse)
        assert sorted(extracted) == ["a.docx", "b.docx", "c.docx"]
        assert {r.document_id for r in first.tally.rejections} == {"d5", "d6"}
        loaded = [d for ref in first.batches for d in read_batch(ledger, first.run_id, manifest, ref).documents]
        assert {d.document_id: d.words for d in loaded} == expected and len(extracted) == 3
        rerun = record_plan(ledger, manifest, campaign="t", batch_size=2)
        assert len(extracted) == 3 and rerun.tally.words == first.tally.words
        (tmp_path / "term" / "docs" / "b.docx").write_bytes(docx_package(para("rewritten, now six words long")))
        record_plan(ledger, manifest, campaign="t", batch_size=2)
        assert extracted[3:] == ["b.docx"]
        t = ExtractedWordsRow
        with ledger.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(t)).scalar_one() == 4
        execute_purge(ledger.engine, plan_purge(ledger.engine, campaigns=["t"]))
        with ledger.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(t)).scalar_one() == 0


def test_the_store_is_per_campaign_and_counts_match_a_fresh_extraction(tmp_path: Path) -> None:
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        store = LedgerWordStore(ledger, "t", "run-1")
        store.store({"h1": 3, "h2": 0})
        store.store({"h1": 99})  # a count already kept stays as it is
        assert LedgerWordStore(ledger, "t", None).lookup(["h1", "h2", "h3"]) == {"h1": 3, "h2": 0}
        assert LedgerWordStore(ledger, "other", None).lookup(["h1"]) == {}
    manifest = _term(tmp_path / "term")
    paths = list(file_paths(manifest, limit_bytes=10_000_000))
    assert [p.name for p in paths] == ["a.docx", "b.docx", "same-as-a.docx", "c.docx"]
    memory: dict[str, int] = {}

    class Memory:
        def lookup(self, digests: Any) -> dict[str, int]:
            return {d: memory[d] for d in digests if d in memory}

        def store(self, found: Any) -> None:
            memory.update(found)

    assert word_cache.prefetch(paths, Memory(), workers=2) == 3
    words = sorted(memory.values())
    fresh = sorted(count_words(extract_text(p.read_bytes(), p.name)) for p in paths if p.name != "same-as-a.docx")
    assert words == fresh


def test_the_prefetch_reads_a_hostile_manifest_within_the_readers_limits(tmp_path: Path) -> None:
    """The prefetch reads the manifest before the reader judges it: a JSON line nested past the
    recursion limit is skipped (the reader rejects that row), an unclosed CSV quote stops it
    after one row's limit, and neither raises (the run once died here with a RecursionError)."""
    from doccheck.sources.manifest import MAX_ROW_CHARS

    (tmp_path / "a.txt").write_text("words of a\n")
    (tmp_path / "b.txt").write_text("words of b\n")
    deep = '{"path": "x.txt", "m": ' + "[" * 100_000 + "]" * 100_000 + "}"
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_text('{"path": "a.txt"}\n' + deep + '\n{"path": "b.txt"}\n{"path": 5}\n[1]\n')
    assert [p.name for p in file_paths(jsonl, limit_bytes=1000)] == ["a.txt", "b.txt"]
    csv_file = tmp_path / "m.csv"
    csv_file.write_text(
        'document_id,path\nd1,a.txt\nd2,"never closed\n'
        + ("x" * 1000 + "\n") * (MAX_ROW_CHARS // 1000 + 2)
        + "d3,b.txt\n"
    )
    assert [p.name for p in file_paths(csv_file, limit_bytes=1000)] == ["a.txt"]


def test_counts_are_kept_per_extractor(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count made by another extractor (PDFium replacing pypdf, a new reader) is not trusted."""
    from doccheck.extract import cache

    assert cache.extractor_id().startswith("doccheck.extract/")
    assert "pypdfium2=" in cache.extractor_id() and "olefile=" in cache.extractor_id()
    before = cache.key_for("a" * 64)
    monkeypatch.setattr(cache, "extractor_id", lambda: "doccheck.extract/99;pypdfium2=0")
    assert cache.key_for("a" * 64) != before and len(cache.key_for("a" * 64)) == 64


def test_the_signer_takes_the_text_the_count_was_taken_from(tmp_path: Path, extracted: list[str]) -> None:
    """Cohort matching signs each new file's text: the prefetch's text, handed over once, not a second read."""
    from doccheck.matching import match_cohort

    manifest = _term(tmp_path / "term")
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        plan = record_plan(ledger, manifest, campaign="t", batch_size=2)
        assert sorted(extracted) == ["a.docx", "b.docx", "c.docx"]
        docs = [d for ref in plan.batches for d in read_batch(ledger, plan.run_id, manifest, ref).documents]
        result = match_cohort(docs, campaign="t", run_id=plan.run_id)
    assert not result.skipped
    assert sorted(extracted) == ["a.docx", "b.docx", "c.docx", "same-as-a.docx"]
    # a's text was handed over once (to d1); d3 has the same bytes and was read again
    assert word_cache.take_text(docs[0].content_hash) is None


def test_what_bytes_were_read_as_is_kept_for_the_latest_files_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process keeps what the latest files were read as (a file's is asked within a few chunks of
    being kept), the oldest forgotten first, each type one string: a term of 100,000 files held
    ~20 MB of them to the end of its run."""
    monkeypatch.setattr(word_cache, "_read_as", type(word_cache._read_as)())
    monkeypatch.setattr(word_cache, "_READ_AS_KEPT", 3)
    for n in range(5):
        word_cache.keep_read_as({f"d{n}": "".join([".", "odt"])})  # a new string each time, as extraction makes
    word_cache.keep_read_as({"d2": ".odt"})  # kept again: the newest
    assert list(word_cache._read_as) == ["d3", "d4", "d2"]
    assert len({id(kind) for kind in word_cache._read_as.values()}) == 1
    assert word_cache.cached_read_as("d4") == ".odt" and word_cache.cached_read_as("d0") is None


def test_a_stores_plain_text_is_counted_without_asking_the_store(bucket: Any) -> None:
    """Read ahead from a bucket, a plain-text file's words are counted where they are read: the
    store's query for a known count (~0.4 ms a file) costs more than counting them (issue 48's
    first run from a bucket). A file read in the sandbox is still asked for first."""
    from doccheck.extract._parse import read_in_process
    from doccheck.storage import Listing, resolve

    fs, _requests = bucket
    fs.pipe({"/term/a.txt": b"three plain words", "/term/b.docx": docx_package(para("four words of docx"))})
    asked: list[str] = []

    class Store:
        def lookup(self, digests: Any) -> dict[str, int]:
            asked.extend(digests)
            return {}

        def store(self, found: Any) -> None:
            pass

        def lookup_files(self, keys: Any) -> dict[Any, Any]:
            return {}

        def store_files(self, found: Any) -> None:
            pass

    root = resolve("memory://term")
    listing = Listing(root)
    files = [(root / name, listing.entry(root / name)) for name in ("a.txt", "b.docx")]
    assert word_cache.prefetch_listed(files, Store(), fetchers=1) == 2  # type: ignore[arg-type]
    docx_key = word_cache.key_for(hashlib.sha256(fs.cat("/term/b.docx")).hexdigest())
    assert asked == [docx_key]
    assert read_in_process(b"plain words", "a.md") and read_in_process(b"plain", "a.TXT")
    assert not read_in_process(b"%PDF-1.7 named as text", "a.txt")  # its bytes say PDF: the sandbox reads it
    assert not read_in_process(b"<p>words</p>", "a.html")
