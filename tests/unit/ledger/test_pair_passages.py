"""A cohort pair's passages kept by campaign and both sides' hashes (issue 48): looked up and kept
once, purged with the campaign, and gained by a ledger from before when it is opened."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from sqlalchemy import inspect, text

from doccheck.ledger import Ledger, execute_purge, keep_passages, kept_passages, plan_purge

KEY = ("a" * 64, "b" * 64, "c" * 64)


def test_kept_once_and_found_by_both_hashes_and_the_basis(ledger: Ledger) -> None:
    with ledger.engine.begin() as conn:
        assert keep_passages(conn, "c", "r1", {KEY: "[[9,[],[]]]"}) == 1
        keep_passages(conn, "c", "r2", {KEY: "[]"})  # kept once: left as it is
    with ledger.engine.connect() as conn:
        assert kept_passages(conn, "c", [KEY, (KEY[1], KEY[0], KEY[2]), (*KEY[:2], "d" * 64)]) == {KEY: "[[9,[],[]]]"}
        assert kept_passages(conn, "other", [KEY]) == {}


def test_purged_with_the_campaign(ledger: Ledger) -> None:
    for campaign in ("c", "keep"):
        run_id = ledger.start_run(campaign=campaign, manifest="s3://term/m.csv", products=["ai"])
        with ledger.engine.begin() as conn:
            keep_passages(conn, campaign, run_id, {KEY: "[]"})
    execute_purge(ledger.engine, plan_purge(ledger.engine, campaigns=["c"]))
    with ledger.engine.connect() as conn:
        assert conn.execute(text("SELECT campaign FROM pair_passages")).scalars().all() == ["keep"]


def test_a_ledger_from_before_gains_the_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with closing(Ledger(url)) as ledger, ledger.engine.begin() as conn:
        conn.execute(text("DROP TABLE pair_passages"))
    with closing(Ledger(url)) as ledger:
        assert "pair_passages" in inspect(ledger.engine).get_table_names()
