"""A hostile manifest through a real run: the bad rows are rejected, the others are checked.

Before, a lone surrogate passed the dry run, then the real run failed with exit 1 and left an
empty run in the ledger. Here ``doccheck run`` (a subprocess, real emulator, real Prefect
server) must reject every hostile row, send the good ones and record both in the ledger; and
the rejections a hostile manifest produces must be storable in SQLite and PostgreSQL.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from doccheck.ledger import Ledger
from doccheck.pipeline import load_plan
from tests.fixtures.emulator import EmulatorHandle
from tests.unit.hostile_manifests import hostile_jsonl, hostile_lines

pytestmark = [pytest.mark.integration]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    env.update(extra, COLUMNS="200")
    return env


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doccheck.cli", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=240
    )


@pytest.mark.prefect_server
def test_real_run_rejects_hostile_rows_and_checks_the_rest(
    prefect_server: object, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    key = emulator.new_account()
    ledger_path = tmp_path / "ledger.db"
    env = _env(
        DOCCHECK_BASE_URL=emulator.base_url, DOCCHECK_API_KEY=key, DOCCHECK_DATABASE_URL=f"sqlite:///{ledger_path}"
    )
    manifest = tmp_path / "hostile.jsonl"
    manifest.write_bytes(hostile_jsonl())
    cases = hostile_lines()

    dry = _cli(["run", str(manifest), "--dry-run"], env, tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert emulator.account_state(key)["checks"] == 0

    run = _cli(
        ["run", str(manifest), "--out", "out", "--grace-seconds", "0", "--poll-interval", "0.1", "--no-progress"],
        env,
        tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert emulator.account_state(key)["checks"] == 2

    subs = pq.read_table(tmp_path / "out" / "latest" / "submissions.parquet").to_pandas()
    assert sorted(subs.loc[subs["status"] != "rejected", "document_id"]) == ["good-1", "good-2"]
    rejected = subs[subs["status"] == "rejected"].sort_values("row_number")
    assert list(rejected["row_number"]) == list(range(2, len(cases) + 2))
    assert list(rejected["error_code"]) == [code for _, code, _, _ in cases]

    with sqlite3.connect(ledger_path) as db:
        (run_id,) = db.execute("SELECT id FROM runs").fetchone()
        documents = db.execute("SELECT count(*) FROM documents WHERE run_id = ?", (run_id,)).fetchone()[0]
        rejections = db.execute("SELECT count(*) FROM rejections WHERE run_id = ?", (run_id,)).fetchone()[0]
    assert (documents, rejections) == (2, len(cases))


@pytest.mark.postgres
def test_hostile_rejections_are_storable_in_postgres_and_sqlite(postgres_database: str, tmp_path: Path) -> None:
    manifest = tmp_path / "hostile.jsonl"
    manifest.write_bytes(hostile_jsonl())
    plan = load_plan(manifest, campaign="hostile")
    for url in (postgres_database, f"sqlite:///{tmp_path / 'ledger.db'}"):
        ledger = Ledger(url)
        try:
            run_id = ledger.start_run(campaign=plan.campaign, manifest=str(manifest))
            assert ledger.record_documents(run_id, plan.documents) == 2
            assert ledger.record_rejections(run_id, plan.rejections) == len(hostile_lines())
            rows = ledger.report_rows(run_id=run_id)["submissions"]
            assert sorted(r["status"] for r in rows) == ["rejected"] * len(hostile_lines()) + ["unsent"] * 2
        finally:
            ledger.close()
