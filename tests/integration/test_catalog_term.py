"""The term's catalog against the real emulator (issue 40): three campaigns and a rerun, run
as the notebook runs them, give a ``documents`` view counting each document once whose money
sums to what the service charged; ``collect`` rebuilds the catalog; the docs' one-liners run."""

from __future__ import annotations

import ast
import asyncio
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow
import pyarrow.dataset
import pytest

import doccheck
from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.outputs import CATALOG_FILE
from doccheck.pipeline import collect_runs
from tests.factories import essay
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


def _frame(start: int, count: int) -> pd.DataFrame:
    return pd.DataFrame({"id": [f"s{i}" for i in range(start, start + count)],
                         "body": [essay(i) for i in range(start, start + count)]})  # fmt: skip


def _check(emulator: EmulatorHandle, key: str, out: Path, db: str, campaign: str, df: pd.DataFrame) -> dict[str, Any]:
    result = doccheck.check_dataframe(
        df, text_column="body", id_column="id", products=["ai", "similarity"], base_url=emulator.base_url,
        api_key=key, campaign=campaign, database_url=db, out_dir=out, grace_seconds=0, poll_interval=0.2,
        timeout=60, progress=False,
    )  # fmt: skip
    return dict(result.summary)


def _one_liners() -> list[ast.Expression]:
    """The expressions of docs/data.md's code block after ``<!-- one-liners -->`` (each may span
    lines: the docs' code blocks are formatted like the code)."""
    page = (ROOT / "docs" / "data.md").read_text(encoding="utf-8")
    block = page.split("<!-- one-liners -->\n```python\n", 1)[1].split("```", 1)[0]
    return [ast.Expression(node.value) for node in ast.parse(block).body if isinstance(node, ast.Expr)]


def test_a_term_in_one_query(emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = emulator.new_account()
    out = tmp_path / "reports"
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    tag = uuid.uuid4().hex[:6]
    courses = {f"course-a-{tag}": _frame(0, 3), f"course-b-{tag}": _frame(10, 2), f"course-c-{tag}": _frame(20, 2)}
    for campaign, df in courses.items():
        _check(emulator, key, out, db, campaign, df)
    rerun = _check(emulator, key, out, db, f"course-a-{tag}", _frame(0, 4))  # a weekly rerun: one new essay
    assert rerun["submitted"] == 1

    con = doccheck.catalog(out)
    counts_and_money = con.execute("SELECT campaign, count(*), sum(net_cents) FROM documents GROUP BY ALL").fetchall()
    counts = {campaign: n for campaign, n, _ in counts_and_money}
    assert counts == {f"course-a-{tag}": 4, f"course-b-{tag}": 2, f"course-c-{tag}": 2}
    charged = emulator.account_state(key)["charged_cents"]
    assert con.execute("SELECT sum(net_cents) FROM documents").fetchall() == [(charged,)] and charged > 0
    assert con.execute("SELECT sum(charged_cents), sum(new_checks) FROM runs").fetchall() == [(charged, 8)]
    assert con.execute("SELECT count(*) FROM documents_history").fetchall() == [(3 + 2 + 2 + 4,)]
    assert con.execute("SELECT count(DISTINCT run_id) FROM ai_results").fetchall() == [(4,)]
    names = {row[0] for row in con.execute("SELECT report_folder FROM runs").fetchall()}
    assert all((out / name / "run.json").is_file() for name in names)

    # collect (no Prefect) writes the campaign's run again into a new folder: the catalog follows it.
    ledger = Ledger(db)
    try:

        async def collect() -> None:
            async with AsyncDocCheckClient(emulator.base_url, key) as client:
                await collect_runs(ledger, client, campaign=f"course-b-{tag}", out_dir=str(out))

        asyncio.run(collect())
    finally:
        ledger.close()
    fresh = doccheck.catalog(out)
    folder = fresh.execute(f"SELECT report_folder FROM runs WHERE campaign = 'course-b-{tag}'").fetchall()[0][0]
    assert folder not in names  # the collect's folder, not the run's first
    assert fresh.execute("SELECT sum(net_cents) FROM documents").fetchall() == [(charged,)]

    # The documented one-liners, from the folder that holds reports/.
    monkeypatch.chdir(tmp_path)
    expressions = _one_liners()
    assert len(expressions) == 4
    names = {"doccheck": doccheck, "duckdb": duckdb, "pyarrow": pyarrow}
    values = [eval(compile(e, "docs/data.md", "eval"), names) for e in expressions]  # noqa: S307 - our own docs
    assert sorted(values[0]) == sorted(counts_and_money)
    assert values[1] == [(4,)]
    assert sum(n for _, _, n in values[2]) == 3 + 2 + 2 + 4  # submissions of every run (a rerun repeats)
    assert values[3].to_dict() == {f"course-a-{tag}": 4, f"course-b-{tag}": 2, f"course-c-{tag}": 2}
    assert (out / CATALOG_FILE).is_file()
