"""Issue 22, "Done when": a `doccheck run` SIGKILLed with requests in flight, resumed after more
than the key retention, against emulator profiles that chose differently: 0 duplicate
charges, and service = ledger = report (or the documents that cannot be proven are reported
``in_doubt`` with the next step and the run exits 3, never resent).

Real processes, as in test_keys_in_flight.py (whose crash script and helpers this reuses):
the run is stalled at its 4th recorded answer while requests are in flight, then killed. On
SQLite for every profile; on PostgreSQL for the two whose money differs (a key refused for
reuse, a price known at completion).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from doccheck.ledger import Ledger
from doccheck.ledger.tables import ClaimRow
from tests.fixtures.emulator import EmulatorHandle
from tests.integration.test_keys_in_flight import CRASHING_RUN, REPO, cli_env, finish, start_run, write_manifest

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]


@pytest.fixture(scope="module")
def emulator(isolated_emulator: EmulatorHandle) -> EmulatorHandle:
    return isolated_emulator


def _crash(emulator: EmulatorHandle, key: str, manifest: Path, database_url: str, tmp_path: Path) -> None:
    env = cli_env(emulator, key)
    emulator.set_faults(latency_ms=200)  # several requests in flight at the kill
    script = tmp_path / "crashing_run.py"
    script.write_text(CRASHING_RUN)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(manifest), database_url, emulator.base_url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "STALLED" in line, (line, proc.wait(timeout=30), proc.stderr.read() if proc.stderr else "")
        until = time.monotonic() + 20
        while emulator.account_state(key)["checks"] < 6 and time.monotonic() < until:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    emulator.reset_faults()


@pytest.mark.parametrize("profile", ["reuse-refused", "price-at-completion", "status-synonyms", "list-no-metadata"])
def test_sigkill_then_resume_past_the_retention_bills_each_document_once(
    prefect_server: Any, emulator: EmulatorHandle, profile: str, tmp_path: Path
) -> None:
    _sigkill_then_resume(emulator, profile, f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path)


@pytest.mark.parametrize("profile", ["reuse-refused", "price-at-completion"])
def test_on_postgres_the_report_bills_what_the_service_charged(
    prefect_server: Any, emulator: EmulatorHandle, postgres_database: str, profile: str, tmp_path: Path
) -> None:
    """The same kill and resume on a PostgreSQL ledger: the report's net (and the ledger's) equals
    what the service charged, a key refused for reuse or a price known only at completion."""
    _sigkill_then_resume(emulator, profile, postgres_database, tmp_path)


def _sigkill_then_resume(emulator: EmulatorHandle, profile: str, database_url: str, tmp_path: Path) -> None:
    key = emulator.new_account()
    emulator.set_profile(profile, api_key=key)
    n_docs = 20
    manifest = write_manifest(tmp_path, n_docs)
    _crash(emulator, key, manifest, database_url, tmp_path)
    at_crash = emulator.account_state(key)["checks"]
    emulator.advance(2 * 86400)  # past the 24 h key retention: a resend would bill again
    ledger = Ledger(database_url)
    with ledger.engine.begin() as conn:  # the dead run's leases are long over
        conn.execute(ClaimRow.__table__.update().values(expires_at=datetime.now(UTC) - timedelta(days=2)))
    with ledger.engine.connect() as conn:
        known = conn.exec_driver_sql("SELECT count(*) FROM submissions WHERE state = 'submitted'").scalar()
    env = cli_env(emulator, key)
    code, out, err = finish(start_run(manifest, database_url, env))
    state = emulator.account_state(key)
    with ledger.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT state, check_id FROM submissions").all()
    in_doubt = sum(r.state == "in_doubt" for r in rows)
    submitted = sum(r.state == "submitted" for r in rows)
    if profile == "list-no-metadata":  # the lost checks cannot be proven: reported, never resent
        assert in_doubt >= 1 and code == 3, (out, err)
        assert "doccheck resolve --campaign course" in out
        assert submitted + in_doubt == n_docs
        # every check made after the crash is a document sent for the first time: 0 duplicates
        assert state["checks"] - at_crash == submitted - known, (at_crash, known, submitted, state)
        return
    assert state["checks"] == n_docs, (profile, at_crash, state, out, err)  # 0 duplicate charges
    assert code == 0 and in_doubt == 0, (profile, out, err)
    assert {r.state for r in rows} == {"submitted"} and len({r.check_id for r in rows}) == n_docs
    emulator.advance(120)  # every product finishes; collect reads results, refunds and late prices
    collect = subprocess.run(
        [sys.executable, "-m", "doccheck.cli", "collect", "--campaign", "course", "--database-url", database_url,
         "--out", str(tmp_path / "reports")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180,
    )  # fmt: skip
    assert collect.returncode == 0, (collect.stdout, collect.stderr)
    charged = emulator.account_state(key)["charged_cents"]
    report = ledger.report_rows(campaign="course")["submissions"]
    assert sum(r["net_cents"] for r in report) == charged, (profile, charged)  # service = report
    with ledger.engine.connect() as conn:
        ledger_net = conn.exec_driver_sql("SELECT sum(charged_cents - refunded_cents) FROM check_costs").scalar()
    assert ledger_net == charged, profile  # service = ledger
    assert ledger.outcome_counts(campaign="course")["pending"] == 0  # synonyms end, nothing unread
    ledger.close()
