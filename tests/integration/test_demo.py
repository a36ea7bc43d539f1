"""``doccheck demo`` as the README promises: one command, clean output, complete reports,
nothing left running. Pointed at the session Prefect server through PREFECT_API_URL
(the demo's own background server is exercised by ``test_demo_local_prefect_server``
only for its start/stop helpers, which are cheap to test without the UI)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from doccheck.commands import ensure_prefect_server, running_prefect_server, stop_prefect_server

pytestmark = [pytest.mark.integration]

SAMPLE_DATA = Path(__file__).resolve().parents[2] / "sample_data"
NOISE = (
    "Traceback",
    "CancelledError",
    "database is locked",
    "Error logging to API",
    "WARNING",
    "ERROR",
    "Exception",
    "Task run",
    "Flow run",
    "demo-key",
)


@pytest.mark.prefect_server
@pytest.mark.slow  # 14-73 s: the demo's emulator, receiver and flow run, each its own process
def test_demo_output_is_clean_and_reports_are_complete(prefect_server: Any, tmp_path: Path) -> None:
    shutil.copytree(SAMPLE_DATA, tmp_path / "sample_data", ignore=shutil.ignore_patterns("make_corpus.py"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    env["PREFECT_API_URL"] = prefect_server.api_url
    env["COLUMNS"] = "120"
    out = subprocess.run(
        [sys.executable, "-m", "doccheck.cli", "demo"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=240,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert out.stderr.strip() == "", out.stderr
    for word in NOISE:
        assert word not in text, f"{word!r} in demo output:\n{text}"
    assert "finished" in text and "stopped the emulator and the receiver" in text
    assert prefect_server.api_url in text

    latest = tmp_path / "reports" / "latest"
    subs = pq.read_table(latest / "submissions.parquet").to_pandas()
    assert len(subs) == 20
    assert (subs["status"] == "submitted").sum() == 13 and (subs["status"] == "rejected").sum() == 7
    ai = pq.read_table(latest / "ai_results.parquet").to_pandas()
    assert len(ai) == 13 and (ai["status"] == "completed").all() and ai["score"].notna().all()
    sim = pq.read_table(latest / "similarity_results.parquet").to_pandas()
    assert len(sim) == 11 and (sim["status"] == "completed").all()
    assert pq.read_table(latest / "similarity_sources.parquet").num_rows >= 1  # the near-duplicate pair

    # Nothing the demo started is still listening (emulator, receiver).
    for log in ("emulator.log", "receiver.log"):
        assert (tmp_path / ".doccheck-demo" / log).exists()
    receiver_log = (tmp_path / ".doccheck-demo" / "receiver.log").read_text()
    assert "stored" in receiver_log  # the results came through signed webhooks
    secret_file = tmp_path / ".doccheck-demo" / "webhook-secrets.json"
    assert secret_file.stat().st_mode & 0o777 == 0o600  # the secret: an owner-only file...
    with sqlite3.connect(tmp_path / ".doccheck-demo" / "ledger.db") as db:  # ...never the ledger
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "webhook_secrets" not in tables and "submissions" in tables

    # Its flow run is in the Prefect server.
    runs = httpx.post(
        f"{prefect_server.api_url}/flow_runs/filter",
        json={"flow_runs": {"name": {"any_": ["bulk-check sample-data-demo"]}}},
    ).json()
    assert runs and runs[-1]["state_type"] == "COMPLETED"


def test_demo_stop_server_without_a_server_is_clean(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "doccheck.cli", "demo", "--stop-server"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 0 and "no local Prefect server was running" in out.stdout, out.stderr


@pytest.mark.slow  # 10-52 s: a Prefect server of its own, its database migrated from nothing
def test_local_prefect_server_starts_is_reused_and_stops(tmp_path: Path) -> None:
    home = tmp_path / ".prefect"
    api_url = ensure_prefect_server(home, ui=False)
    try:
        assert httpx.get(f"{api_url}/health").status_code == 200
        assert ensure_prefect_server(home, ui=False) == api_url  # reused, not a second server
        assert running_prefect_server(home) == api_url
    finally:
        assert stop_prefect_server(home)
    assert running_prefect_server(home) is None
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{api_url}/health", timeout=2)
