"""Scale-out configuration as a user meets it (issue 12): ``doccheck run --shards N`` on a
SQLite ledger stops before anything is recorded, naming the fix; without the shard
deployment on the server the error says how to deploy it; and the ledger's schema can
be created by many workers starting at once on a fresh PostgreSQL database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration]


def _manifest(folder: Path) -> Path:
    rows = [{"document_id": f"k-{i}", "text": f"Essay {i} on rivers, mills and bridges in old towns. " * 6}
            for i in range(4)]  # fmt: skip
    path = folder / "course.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _cli(args: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    env.update(extra, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "doccheck.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=180)  # fmt: skip


@pytest.mark.prefect_server
def test_shards_on_sqlite_stop_before_anything_is_recorded(
    prefect_server: Any, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    key = emulator.new_account()
    db = tmp_path / "ledger.db"
    out = _cli(
        ["run", str(_manifest(tmp_path)), "--shards", "3", "--database-url", f"sqlite:///{db}", "--no-progress"],
        tmp_path, DOCCHECK_API_KEY=key, DOCCHECK_BASE_URL=emulator.base_url,
    )  # fmt: skip
    assert out.returncode != 0, out.stdout
    text = out.stdout + out.stderr
    assert "use PostgreSQL" in text and "DOCCHECK_DATABASE_URL=postgresql" in text, text
    assert key not in text
    assert not db.exists() or db.stat().st_size == 0 or "runs" not in _tables(db)
    assert emulator.account_state(key)["checks"] == 0


def _tables(db: Path) -> set[str]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}


@pytest.mark.postgres
@pytest.mark.prefect_server
def test_missing_shard_deployment_names_the_fix(
    prefect_server: Any, emulator: EmulatorHandle, postgres_database: str, tmp_path: Path
) -> None:
    key = emulator.new_account()
    out = _cli(
        ["run", str(_manifest(tmp_path)), "--shards", "2", "--database-url", postgres_database, "--no-progress"],
        tmp_path, DOCCHECK_API_KEY=key, DOCCHECK_BASE_URL=emulator.base_url,
        DOCCHECK_SHARD_DEPLOYMENT="bulk-check-shard/not-deployed-here",
    )  # fmt: skip
    assert out.returncode != 0, out.stdout
    text = out.stdout + out.stderr
    assert "not-deployed-here" in text and "prefect deploy --prefect-file deployments/prefect.yaml" in text, text
    assert emulator.account_state(key)["checks"] == 0


_CREATE = """
import sys, time
from pathlib import Path
from doccheck.ledger import Ledger
ready, gun = Path(sys.argv[2]), Path(sys.argv[3])
ready.touch()  # imported: waiting for the gun
while not gun.exists():
    time.sleep(0.001)
ledger = Ledger(sys.argv[1])
run_id = ledger.start_run(campaign="race", manifest="m.csv", products=["ai"], params={})
print(run_id)
"""


@pytest.mark.postgres
@pytest.mark.slow
def test_schema_creation_is_safe_when_workers_start_at_once(postgres_database: str, tmp_path: Path) -> None:
    """Eight processes open the ledger of a fresh database at the same instant: the gun
    fires once every one of them has imported and waits for it (a fixed delay fired
    before the slowest import on a loaded machine, and long after the last on an idle one)."""
    import time

    gun = tmp_path / "gun"
    ready = [tmp_path / f"ready-{i}" for i in range(8)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CREATE, postgres_database, str(flag), str(gun)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for flag in ready
    ]
    deadline = time.monotonic() + 120
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break  # one died while importing: its error is reported below
        time.sleep(0.05)
    assert all(flag.exists() for flag in ready) or any(p.poll() is not None for p in procs), "not all ready in 120 s"
    gun.touch()
    results = [p.communicate(timeout=120) for p in procs]
    for proc, (stdout, stderr) in zip(procs, results, strict=True):
        assert proc.returncode == 0, stderr[-3000:]
        assert stdout.strip()
    from doccheck.ledger import Ledger

    ledger = Ledger(postgres_database)
    try:
        assert all(ledger.get_run(stdout.strip()) is not None for stdout, _ in results)
    finally:
        ledger.close()
