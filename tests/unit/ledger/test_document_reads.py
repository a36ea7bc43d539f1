"""Issue 41: the report says a file was misnamed. What each file was read as is kept per campaign,
document and bytes (``doccheck.ledger._document_reads``), reported as ``read_as``/``named_as``/
``misnamed``, counted in the tally, and said again by a rerun that reads nothing; an existing
ledger without the table gains it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text

from doccheck.extract import cache as word_cache
from doccheck.extract import read_as_named
from doccheck.ledger import Ledger
from doccheck.ledger._document_reads import count_misnamed, read_columns, reads_for_documents, reads_for_hashes
from doccheck.pipeline import load_plan, record_plan
from tests import generated_documents as gen
from tests.factories import essay


@pytest.fixture(autouse=True)
def fresh_process() -> Iterator[None]:
    """Nothing read in this process before the test (the in-memory read types forgotten)."""
    word_cache._read_as.clear()
    yield
    word_cache._read_as.clear()


def _term(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    odt = gen.odt_paragraphs([essay(1)])
    (folder / "essay.docx").write_bytes(odt)  # an OpenDocument file named .docx
    (folder / "copy.odt").write_bytes(odt)  # the same bytes, named right
    (folder / "notes.txt").write_text(essay(2), encoding="utf-8")
    (folder / "notes.md").write_text(essay(2), encoding="utf-8")  # the same bytes as notes.txt: no signature
    manifest = folder / "term.csv"
    manifest.write_text("document_id,path\nm,essay.docx\nc,copy.odt\nt,notes.txt\nd,notes.md\n", encoding="utf-8")
    return manifest


def test_the_plan_says_what_each_file_was_read_as(tmp_path: Path) -> None:
    docs = {d.document_id: d for d in load_plan(_term(tmp_path), campaign="t").documents}
    assert (docs["m"].read_as, docs["m"].named_as, docs["m"].misnamed) == (".odt", ".docx", True)
    assert (docs["c"].read_as, docs["c"].misnamed) == (".odt", False)
    assert (docs["t"].read_as, docs["d"].read_as) == (".txt", ".md")  # by their names: no signature
    assert not docs["t"].misnamed and not docs["d"].misnamed


def test_read_as_named_keeps_signatures_and_names_the_unsigned() -> None:
    assert read_as_named("essay.docx", ".odt") == ".odt"
    assert read_as_named("notes.md", ".txt") == ".md"  # bytes without a signature: read by the name
    assert read_as_named("page.HTML", ".txt") == ".html"


def test_the_ledger_keeps_it_and_the_report_says_it(tmp_path: Path) -> None:
    manifest = _term(tmp_path / "term")
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        first = record_plan(ledger, manifest, campaign="t", batch_size=2)
        assert first.tally.misnamed == 1
        with ledger.engine.connect() as conn:
            assert count_misnamed(conn, first.run_id) == 1
        rows = {r["document_id"]: r for r in ledger.report_rows(run_id=first.run_id)["submissions"]}
        assert {k: rows["m"][k] for k in ("read_as", "named_as", "misnamed")} == {
            "read_as": "odt", "named_as": "docx", "misnamed": True,
        }  # fmt: skip
        assert (rows["c"]["read_as"], rows["c"]["misnamed"]) == ("odt", False)
        assert (rows["t"]["read_as"], rows["d"]["read_as"], rows["d"]["misnamed"]) == ("txt", "md", False)


def test_a_rerun_that_reads_nothing_still_says_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = _term(tmp_path / "term")
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        record_plan(ledger, manifest, campaign="t", batch_size=2)
        word_cache._read_as.clear()  # a new process

        def no_reading(*args: Any, **kwargs: Any) -> None:
            raise AssertionError("a rerun of unchanged files reads none of them")

        monkeypatch.setattr(word_cache, "extract", no_reading)
        monkeypatch.setattr("doccheck.extract.extract", no_reading)
        (tmp_path / "term" / "renamed.docx").write_bytes((tmp_path / "term" / "copy.odt").read_bytes())
        with (tmp_path / "term" / "term.csv").open("a", encoding="utf-8") as fh:
            fh.write("r,renamed.docx\n")  # a new document, bytes the campaign read before under another name
        rerun = record_plan(ledger, manifest, campaign="t", batch_size=2)
        assert rerun.tally.misnamed == 2
        rows = {r["document_id"]: r for r in ledger.report_rows(run_id=rerun.run_id)["submissions"]}
        assert (rows["m"]["misnamed"], rows["r"]["misnamed"], rows["r"]["read_as"]) == (True, True, "odt")
        assert rows["c"]["misnamed"] is False


def test_the_functions_on_their_own(ledger: Ledger) -> None:
    from types import SimpleNamespace

    run_id = ledger.start_run(campaign="t", manifest="m.csv", products=["ai"])
    docs = [SimpleNamespace(document_id="a", content_hash="h1", read_as=".odt", named_as=".docx"),
            SimpleNamespace(document_id="b", content_hash="h2", read_as=None, named_as="")]  # fmt: skip
    from doccheck.ledger._document_reads import record_reads

    with ledger.engine.begin() as conn:
        assert record_reads(conn, "t", run_id, docs) == 1  # b was not read: nothing kept
        record_reads(conn, "t", run_id, docs)  # kept once
    with ledger.engine.connect() as conn:
        assert reads_for_documents(conn, "t", [("a", "h1"), ("a", "h9"), ("b", "h2")]) == {
            ("a", "h1"): (".odt", ".docx")
        }
        assert reads_for_hashes(conn, "t", ["h1", "h2"]) == {"h1": ".odt"}
        assert reads_for_hashes(conn, "other", ["h1"]) == {}
    assert read_columns((".odt", ".docx")) == {"read_as": "odt", "named_as": "docx", "misnamed": True}
    assert read_columns((".odt", ".ott"))["misnamed"] is False  # one format, two names
    assert read_columns(None) == {"read_as": None, "named_as": None, "misnamed": None}


def test_a_ledger_from_before_gains_the_tables(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with closing(Ledger(url)) as ledger:
        run_id = ledger.start_run(campaign="t", manifest="m.csv", products=["ai"])
        with ledger.engine.begin() as conn:
            conn.execute(text("DROP TABLE document_reads"))
            conn.execute(text("DROP TABLE refused_types"))
    with closing(Ledger(url)) as ledger:  # opened by this release: the tables are created, the run kept
        assert {"document_reads", "refused_types"} <= set(inspect(ledger.engine).get_table_names())
        assert ledger.report_rows(run_id=run_id)["submissions"] == []
        with ledger.engine.connect() as conn:
            assert count_misnamed(conn, run_id) == 0


def test_what_the_store_does_not_know_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[str]] = []

    class Store:
        def lookup(self, digests: list[str]) -> dict[str, int]:
            return {}

        def store(self, found: object) -> None:
            pass

        def lookup_read_as(self, digests: list[str]) -> dict[str, str]:
            asked.append(list(digests))
            return {"h1": ".odt"} if "h1" in digests else {}

    with word_cache.using(Store()):
        assert word_cache.cached_read_as("h1") == ".odt"
        assert word_cache.cached_read_as("h2") is None  # counted by a ledger that did not keep it
        assert word_cache.cached_read_as("h2") is None and word_cache.cached_read_as("h1") == ".odt"
    assert asked == [["h1"], ["h2"]]
    word_cache.keep_read_as({"h3": ".pdf"})
    assert word_cache.cached_read_as("h3") == ".pdf"  # read in this process: no store asked
