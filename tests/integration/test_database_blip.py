"""A PostgreSQL restart in the middle of ``doccheck run``'s submit costs seconds, not the run
(issue 23): the ledger calls wait for the database and go on, the command says it is
waiting, and the summary's new checks and charges equal the service's. In this process and
as a flow run (issue 26: its one ``record and submit`` task has no Prefect retries; the
library's own wait for the database is what rides the restart out)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import create_engine, text

from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.postgres import ClusterUnavailable, _as_postgres, find_pg_bin, throwaway_cluster

pytestmark = [pytest.mark.integration]

DOCUMENTS = 90


def _manifest(folder: Path) -> Path:
    rows = [{"document_id": f"b-{i}", "text": f"Essay {i} about the weather in a valley town. " * 12}
            for i in range(DOCUMENTS)]  # fmt: skip
    path = folder / "blip.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _wait_for_checks(emulator: EmulatorHandle, key: str, count: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while emulator.account_state(key)["checks"] < count:
        assert process.poll() is None, "the run ended before the restart"
        assert time.monotonic() < deadline, "the run did not start submitting"
        time.sleep(0.05)


@pytest.mark.parametrize("mode", ["--no-prefect", pytest.param("--prefect", marks=pytest.mark.prefect_server)])
def test_a_postgres_restart_mid_submit_costs_seconds_and_the_summary_stays_exact(
    emulator_faults: EmulatorHandle, tmp_path: Path, mode: str, request: pytest.FixtureRequest
) -> None:
    bin_dir = find_pg_bin()
    try:
        cluster = throwaway_cluster(prefix="doccheck-blip-")
        url = cluster.__enter__()
    except ClusterUnavailable as exc:
        pytest.skip(f"{exc} to run this test")
    assert bin_dir is not None
    try:
        engine = create_engine(url)
        with engine.connect() as conn:
            data_dir = conn.execute(text("SHOW data_directory")).scalar_one()
        engine.dispose()
        emulator_faults.set_faults(latency_ms=60)  # ~3 s of submit at concurrency 2
        key = emulator_faults.new_account()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHECK_", "PREFECT_"))}
        env.update(DOCCHECK_BASE_URL=emulator_faults.base_url, DOCCHECK_API_KEY=key,
                   PREFECT_HOME=str(tmp_path / "ph"), COLUMNS="200")  # fmt: skip
        if mode == "--prefect":
            env["PREFECT_API_URL"] = request.getfixturevalue("prefect_server").api_url
        args = [sys.executable, "-m", "doccheck.cli", "run", str(_manifest(tmp_path)), mode, "--no-wait",
                "--no-progress", "--concurrency", "2", "--products", "ai", "--database-url", url, "--out", "out"]  # fmt: skip
        process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)  # fmt: skip
        try:
            _wait_for_checks(emulator_faults, key, 15, process)
            restarted_at = time.monotonic()
            log = str(Path(data_dir).parent / "server.log")  # -l: the server must not hold pg_ctl's pipe open
            restart = _as_postgres([str(bin_dir / "pg_ctl"), "-D", data_dir, "-l", log, "-m", "fast", "-w", "-t", "30",
                                    "restart"])  # fmt: skip
            assert restart.returncode == 0, restart.stdout + restart.stderr
            assert emulator_faults.account_state(key)["checks"] < DOCUMENTS, "the restart came after the submit"
            stdout, stderr = process.communicate(timeout=90)
            delay = time.monotonic() - restarted_at
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 0, stdout + stderr
        assert "Traceback" not in stdout + stderr
        if mode == "--no-prefect":  # a flow run's warning goes to its logs (the command prints no Prefect noise)
            assert "waiting for the database" in stderr  # a wait, said, not silence
        # Seconds, not the run: the ledger's retry window is 20 s, and a run that gave up would
        # have failed above; the bound is loose because a loaded machine took 24 s to finish.
        assert delay < 60, f"the run ended {delay:.1f} s after the restart"

        service = emulator_faults.account_state(key)
        engine = create_engine(url)
        with engine.connect() as conn:
            summary = conn.execute(text("SELECT summary FROM runs")).scalar_one()
        engine.dispose()
        assert service["checks"] == DOCUMENTS
        assert summary["submitted"] == service["checks"] and summary["reused"] == 0
        assert summary["spent_cents"] == service["charged_cents"] == summary["charged_cents"]
        assert summary["submit_failed"] == 0
    finally:
        cluster.__exit__(None, None, None)
