"""Cohort matching on planted pairs: every kind found, nothing else, and earlier runs compared
from stored signatures alone (the texts of earlier runs are never given again)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from doccheck.ledger import DocumentSignatureRow, Ledger, replace_cohort_matches
from doccheck.matching import LedgerStore, MatchOptions, MemoryStore, match_cohort
from doccheck.matching._shingles import pack_u32, shingle_hashes, to_u32, unpack_u32
from doccheck.outputs import escape_markdown
from tests.matching_corpus import TEMPLATE, copy_section, edit, essay, planted_corpus


@dataclass(frozen=True)
class Doc:
    document_id: str
    text: str | None = None
    path: Path | None = None

    @property
    def content_hash(self) -> str:
        if self.text is not None:
            data = self.text.encode()
        else:
            data = self.path.read_bytes() if self.path and self.path.exists() else str(self.path).encode()
        return hashlib.sha256(data).hexdigest()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    yield led
    led.close()


def found(result) -> dict[frozenset[str], str]:  # type: ignore[no-untyped-def]
    return {frozenset({p["document_id"], p["matched_document_id"]}): p["kind"] for p in result.pairs}


def docs_of(corpus) -> list[Doc]:  # type: ignore[no-untyped-def]
    return [Doc(e.document_id, e.text) for e in corpus.essays]


def test_shingle_hashes_are_stable_across_processes() -> None:
    # Stored signatures must compare with next term's: the hash is fixed, not Python's salted hash().
    h = shingle_hashes("One two three four five six")
    assert h.dtype == np.uint64 and len(h) == 2
    assert to_u32(h).tolist() == sorted(to_u32(h).tolist())
    assert shingle_hashes("ONE two, three: four five")[0] in set(h.tolist())  # case and punctuation ignored
    assert int(to_u32(shingle_hashes("the cat sat on the mat"))[0]) == 2186977580  # golden value: never change
    assert len(shingle_hashes("")) == 0 and len(shingle_hashes("two words")) == 1
    values = np.array([1, 5, 2**32 - 1], dtype=np.uint32)
    assert unpack_u32(pack_u32(values)).tolist() == values.tolist()
    with pytest.raises(ValueError, match="multiple of 4"):
        unpack_u32(b"abc")


@pytest.mark.parametrize("named", [False, True], ids=["template-by-frequency", "template-named"])
def test_every_planted_pair_and_nothing_else_with_a_shared_template(named: bool) -> None:
    corpus = planted_corpus(seed=3, unrelated=40, per_kind=2, template=TEMPLATE)
    options = MatchOptions(template_texts=(TEMPLATE,) if named else ())
    result = match_cohort(docs_of(corpus), campaign="c", run_id="r1", options=options)
    assert found(result) == corpus.pairs
    assert result.counts() == {"identical": 2, "near_duplicate": 4, "copied_section": 2}
    by_pair = {frozenset({p["document_id"], p["matched_document_id"]}): p for p in result.pairs}
    for pair, kind in corpus.pairs.items():
        p = by_pair[pair]
        if kind == "identical":
            assert (p["percent"], p["matched_percent"], p["jaccard"]) == (100.0, 100.0, 1.0)
        elif kind == "copied_section":  # ~a quarter of the smaller side, a few percent of the longer one
            assert 18 <= max(p["percent"], p["matched_percent"]) <= 35 and min(p["percent"], p["matched_percent"]) < 12
            assert 100 <= p["matched_words"] <= 160
        else:
            assert p["jaccard"] >= 0.3


def test_template_alone_pairs_nobody() -> None:
    rng = random.Random(5)
    docs = [Doc(f"s{i}", TEMPLATE + "\n\n" + essay(rng, 120)) for i in range(30)]
    assert match_cohort(docs, campaign="c", run_id="r").pairs == []
    # A shorter campaign: the template (in 12 of 12 documents) is over the default cut-off of 10.
    assert match_cohort(docs[:12], campaign="c", run_id="r").pairs == []


def test_copied_quarter_inside_a_much_longer_essay() -> None:
    rng = random.Random(8)
    source = essay(rng, 500)
    long_one = copy_section(rng, source, essay(rng, 5000), fraction=0.25)
    docs = [Doc("src", source), Doc("long", long_one)] + [Doc(f"u{i}", essay(rng, 500)) for i in range(20)]
    result = match_cohort(docs, campaign="c", run_id="r")
    assert found(result) == {frozenset({"src", "long"}): "copied_section"}
    [pair] = result.pairs
    side = pair["percent"] if pair["document_id"] == "src" else pair["matched_percent"]
    assert side >= 20


def test_heavy_edits_down_to_jaccard_04_are_found() -> None:
    rng = random.Random(21)
    docs: list[Doc] = [Doc(f"u{i}", essay(rng, 500)) for i in range(10)]
    for k in range(10):
        base = essay(rng, 500)
        docs += [Doc(f"h{k}a", base), Doc(f"h{k}b", edit(rng, base, 0.12))]
    result = match_cohort(docs, campaign="c", run_id="r")
    assert found(result) == {frozenset({f"h{k}a", f"h{k}b"}): "near_duplicate" for k in range(10)}
    assert min(p["jaccard"] for p in result.pairs) < 0.45  # really heavy edits among them


def test_second_run_compares_new_documents_with_stored_signatures_only(ledger: Ledger) -> None:
    rng = random.Random(13)
    old = {f"o{i}": essay(rng, 500) for i in range(15)}
    first = match_cohort([Doc(d, t) for d, t in old.items()], campaign="c", run_id="run-1", store=LedgerStore(ledger))
    assert first.pairs == [] and first.documents == 15

    new = {
        "n-light": edit(rng, old["o3"], 0.03),
        "n-section": copy_section(rng, old["o7"], essay(rng, 1500)),
        "n-same": old["o9"],
        "n-alone": essay(rng, 500),
    }
    # Only the new documents are given: the old ones exist as signatures in the ledger.
    second = match_cohort([Doc(d, t) for d, t in new.items()], campaign="c", run_id="run-2", store=LedgerStore(ledger))
    assert second.documents == 4 and second.earlier_documents == 15
    assert found(second) == {
        frozenset({"n-light", "o3"}): "near_duplicate",
        frozenset({"n-section", "o7"}): "copied_section",
        frozenset({"n-same", "o9"}): "identical",
    }
    assert all(p["document_id"].startswith("n-") and p["matched_run_id"] == "run-1" for p in second.pairs)

    # A rerun of the second run stores nothing new and finds the same pairs.
    with ledger.session() as s:
        rows = len(s.exec(DocumentSignatureRow.__table__.select()).all())
    again = match_cohort([Doc(d, t) for d, t in new.items()], campaign="c", run_id="run-3", store=LedgerStore(ledger))
    assert found(again) == found(second)
    with ledger.session() as s:
        assert len(s.exec(DocumentSignatureRow.__table__.select()).all()) == rows == 19
        stored = s.exec(DocumentSignatureRow.__table__.select()).first()
    # No text in the ledger: only hashes (4 bytes a shingle) and the signature.
    assert len(stored.shingles) == 4 * stored.shingle_count and b"the " not in bytes(stored.shingles)
    assert len(stored.signature) == 4 * 128

    # Another campaign never sees them.
    other = match_cohort([Doc("x", old["o3"])], campaign="other", run_id="run-4", store=LedgerStore(ledger))
    assert other.pairs == [] and other.earlier_documents == 0


def test_pairs_are_stored_per_run_and_reported(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c")
    pairs = [{"document_id": "a", "matched_document_id": "b", "kind": "near_duplicate", "percent": 80.0,
              "matched_percent": 79.5, "matched_words": 400, "jaccard": 0.66, "matched_run_id": None}]  # fmt: skip
    replace_cohort_matches(ledger, run_id, "c", pairs)
    replace_cohort_matches(ledger, run_id, "c", pairs)  # a retried task replaces, never duplicates
    rows = ledger.report_rows(run_id=run_id)["cohort_matches"]
    assert rows == [{**pairs[0], "run_id": run_id}]


def test_unreadable_document_is_skipped_with_its_reason(tmp_path: Path) -> None:
    rng = random.Random(2)
    text = essay(rng, 400)
    broken = tmp_path / "broken.docx"
    broken.write_bytes(b"not a zip")
    docs = [
        Doc("a", text),
        Doc("b", text + " one more line"),
        Doc("bad", path=broken),
        Doc("gone", path=tmp_path / "x.txt"),
    ]
    result = match_cohort(docs, campaign="c", run_id="r")
    assert found(result) == {frozenset({"a", "b"}): "near_duplicate"}
    assert [s["document_id"] for s in result.skipped] == ["bad", "gone"]
    assert "'bad'" in result.skipped[0]["reason"] and "cannot read text" in result.skipped[0]["reason"]


def test_memory_store_writes_nothing_and_other_schemes_are_not_mixed() -> None:
    store = MemoryStore()
    rng = random.Random(4)
    text = essay(rng, 300)
    match_cohort([Doc("a", text)], campaign="c", run_id="r1", store=store, options=MatchOptions(num_perm=64))
    result = match_cohort([Doc("b", text)], campaign="c", run_id="r2", store=store)
    # a signature of 64 permutations is another scheme: recomputed, never compared with 128
    assert result.earlier_documents == 0 and result.pairs == []
    result = match_cohort([Doc("c", text)], campaign="c", run_id="r3", store=store, options=MatchOptions(num_perm=64))
    assert found(result) == {frozenset({"a", "c"}): "identical"}


def test_dry_run_reads_an_existing_ledger_and_writes_nothing(ledger: Ledger, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from doccheck.matching import match_plan
    from doccheck.matching._signature_store import existing_ledger

    rng = random.Random(6)
    old = essay(rng, 400)
    match_cohort([Doc("old", old)], campaign="c", run_id="run-1", store=LedgerStore(ledger))
    plan = SimpleNamespace(campaign="c", documents=[Doc("new", old + " and one more sentence here.")])
    result = match_plan(plan, ledger=ledger)  # type: ignore[arg-type]  # no run id: a dry run
    assert found(result) == {frozenset({"new", "old"}): "near_duplicate"}
    assert result.pairs[0]["matched_run_id"] == "run-1"
    with ledger.session() as s:
        assert len(s.exec(DocumentSignatureRow.__table__.select()).all()) == 1
    # No ledger file: none is created.
    assert existing_ledger(f"sqlite:///{tmp_path / 'absent.db'}") is None
    assert not (tmp_path / "absent.db").exists()


def test_pairs_are_shown_in_the_summary_and_as_a_table() -> None:
    from rich.console import Console

    from doccheck.matching import pairs_table, summary_of
    from doccheck.pipeline import RunSummary

    corpus = planted_corpus(seed=3, unrelated=10, per_kind=1)
    summary = summary_of(match_cohort(docs_of(corpus), campaign="c", run_id="r"), top=3)
    assert summary["pairs"] == 4 and len(summary["top"]) == 3 and summary["top"][0]["kind"] == "identical"
    console = Console(width=200, record=True)
    console.print(pairs_table(summary))
    text = console.export_text()
    assert "top 3 of 4" in text and "identical" in text and "same0a" in text
    assert pairs_table({"pairs": 0, "top": []}) is None
    markdown = RunSummary(status="planned", campaign="c", dry_run=True, cohort_matches=summary).as_markdown()
    assert (
        f"| cohort pairs (local) | {escape_markdown('4: identical 1, near-duplicate 2, copied section 1')} |"
        in markdown
    )
