"""What reading a store's file gave (or why its bytes were refused), kept by campaign, location and
listing identity (issue 48): looked up and kept through the word store, purged with the campaign
or the run, and gained by a ledger from before when it is opened."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from sqlalchemy import inspect, text

from doccheck.extract import cache as word_cache
from doccheck.extract.cache import KnownFile
from doccheck.ledger import Ledger, LedgerWordStore, execute_purge, plan_purge
from doccheck.ledger._listed_files import known_files, record_files

A = ("s3://term/course-a/docs/a.pdf", "etag:0a1b:1200")
B = ("s3://term/course-a/docs/b.txt", "etag:9f9f:40")


def test_the_functions_on_their_own(ledger: Ledger) -> None:
    photo = ("s3://term/course-a/docs/c.png", "etag:77:90")
    found = {A: KnownFile("h" * 64, 1200, 310, ".pdf"), B: KnownFile("g" * 64, 40, None, None),
             photo: KnownFile("p" * 64, 90, None, None, ("image_without_text", "a photo or scan, e.g. handwriting"))}  # fmt: skip
    with ledger.engine.begin() as conn:
        assert record_files(conn, "c", "r1", found) == 3
        record_files(conn, "c", "r2", {A: KnownFile("x" * 64, 1, 1, None)})  # kept once: left as it is
    with ledger.engine.connect() as conn:
        assert known_files(conn, "c", [A, B, photo, (A[0], "etag:other:1200")]) == found
        assert known_files(conn, "other campaign", [A]) == {}


def test_the_word_store_answers_for_a_stores_files(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c", manifest="s3://term/course-a/m.csv", products=["ai"])
    known = KnownFile("h" * 64, 1200, 310, ".pdf")
    with word_cache.using(LedgerWordStore(ledger, "c", run_id)):
        assert word_cache.known_file(*A) is None
        word_cache.remember_file(*A, known)
    with word_cache.using(LedgerWordStore(ledger, "c", None)):  # another run: from the table
        assert word_cache.known_file(*A) == known
        assert word_cache.known_file(A[0], "etag:changed:1200") is None
    assert word_cache.known_file(*A) is None  # no store active: every file is read


def test_purged_with_the_campaign(ledger: Ledger) -> None:
    for campaign in ("c", "keep"):
        run_id = ledger.start_run(campaign=campaign, manifest="s3://term/m.csv", products=["ai"])
        LedgerWordStore(ledger, campaign, run_id).store_files({A: KnownFile("h" * 64, 1200, 310, ".pdf")})
    execute_purge(ledger.engine, plan_purge(ledger.engine, campaigns=["c"]))
    with ledger.engine.connect() as conn:
        rows = conn.execute(text("SELECT campaign FROM listed_files")).scalars().all()
    assert rows == ["keep"]


def test_a_ledger_from_before_gains_the_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with closing(Ledger(url)) as ledger, ledger.engine.begin() as conn:
        conn.execute(text("DROP TABLE listed_files"))
    with closing(Ledger(url)) as ledger:
        assert "listed_files" in inspect(ledger.engine).get_table_names()
        LedgerWordStore(ledger, "c", None).store_files({B: KnownFile("g" * 64, 40, 7, ".txt")})
        assert LedgerWordStore(ledger, "c", None).lookup_files([B]) == {B: KnownFile("g" * 64, 40, 7, ".txt")}
