"""Issue 8, defects 1, 2, 4 and 5: one billed check per document under concurrent runs, a
crash with requests in flight resumed after two days, and transient refusals (429, 5xx).

Everything is real where it must be: ``doccheck run`` subprocesses overlapping on one ledger,
a flow subprocess SIGKILLed while its requests are in flight (for each kind of ledger write:
the answers' round, the manifest's recording), on SQLite and PostgreSQL, against a private
emulator whose faults and clock the tests move. What needs no process of its own runs the
command in this process: the reruns after a kill, the rate-limit runs. The truth is the
emulator's own state: the number of checks it created and the cents it charged.

The same crash resumed against a list served oldest first that opens on the account's history
(issue 39) is the reconciler's: tests/unit/pipeline/test_reconcile_decisions.py resumes that
crash against every profile of the emulator, and tests/integration/test_service_profiles.py
against the emulator over sockets.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from doccheck.ledger import ClaimRow, Ledger
from tests.factories import doccheck_in_process
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.postgres import ledger_url

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_faults_after"), pytest.mark.prefect_server]
database_url = ledger_url  # each backend in turn

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def emulator(isolated_emulator: EmulatorHandle) -> EmulatorHandle:
    """A private emulator: these tests inject faults and move its clock by days."""
    return isolated_emulator


def write_manifest(folder: Path, n_text: int, *, n_large: int = 0, name: str = "course") -> Path:
    """``n_large`` files over 4 MB (sent through uploads, first) and ``n_text`` distinct essays."""
    rows: list[dict[str, Any]] = []
    for i in range(n_large):
        path = folder / f"large-{i}.txt"
        line = f"Large report {i}: measured flows of the river basin, season by season. "
        path.write_text(line * (4_250_000 // len(line)))  # just over 4 MiB
        rows.append({"document_id": f"l-{i}", "path": path.name})
    rows += [
        {"document_id": f"t-{i:03d}", "text": f"Essay {i} on rivers, heat and shade in growing cities. " * (8 + i % 5)}
        for i in range(n_text)
    ]
    manifest = folder / f"{name}.csv"
    pd.DataFrame(rows).to_csv(manifest, index=False)
    return manifest


def cli_env(emulator: EmulatorHandle, key: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    env.update(DOCCHECK_BASE_URL=emulator.base_url, DOCCHECK_API_KEY=key, COLUMNS="200")
    return env


def start_run(manifest: Path, database_url: str, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    args = ["run", str(manifest), "--campaign", "course", "--database-url", database_url, "--no-wait",
            "--no-progress", "--out", str(manifest.parent / "reports"), *extra]  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "doccheck.cli", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=manifest.parent,
    )  # fmt: skip


def run_in_process(
    manifest: Path, database_url: str, env: dict[str, str], *extra: str, flow: bool = False
) -> tuple[int, str, str]:
    """:func:`start_run`'s command in this process: a rerun that needs no process of its own.
    Without a flow (``--no-prefect``) unless ``flow``."""
    args = ["run", str(manifest), "--campaign", "course", "--database-url", database_url, "--no-wait",
            "--no-progress", "--out", str(manifest.parent / "reports"), "--prefect" if flow else "--no-prefect",
            *extra]  # fmt: skip
    done = doccheck_in_process(args, env, cwd=manifest.parent)
    return done.returncode, done.stdout, done.stderr


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def assert_one_check_per_document(ledger: Ledger, emulator: EmulatorHandle, key: str, n_docs: int) -> None:
    """Exactly one check per document at the service, all of them in the ledger."""
    state = emulator.account_state(key)
    assert state["checks"] == n_docs, state
    assert state["waiting_uploads"] == 0, state  # no upload slot leaked
    with ledger.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT document_id, state, check_id, cost_cents FROM submissions").all()
    assert len(rows) == n_docs
    assert {r.state for r in rows} == {"submitted"}, [r for r in rows if r.state != "submitted"]
    assert len({r.check_id for r in rows}) == n_docs
    assert sum(r.cost_cents for r in rows) == state["charged_cents"]


@pytest.mark.slow
def test_two_concurrent_runs_under_5xx_make_one_check_per_document(
    prefect_server: Any, emulator: EmulatorHandle, database_url: str, tmp_path: Path
) -> None:
    """Defects 1 and 4: two `doccheck run` of one manifest on one ledger while half the
    requests fail with 5xx. Before: a submitted row went back to submitting and ended
    `failed` (a billed check reported refused), rows ended `failed service_unavailable`,
    and both runs uploaded the large files (a leaked waiting-upload slot). The two processes
    run without a flow: the claims and the retries are the library's (two flow runs of one
    campaign overlap in test_campaign_budget.py)."""
    key = emulator.new_account()
    n_text, n_large = 30, 1
    manifest = write_manifest(tmp_path, n_text, n_large=n_large)
    env = cli_env(emulator, key)
    # Every request first waits 3 s at the service's edge (before any work), so neither run
    # has created a check when the other reads the ledger: both plan to send every document.
    emulator.set_faults(latency_ms=3000)
    ledger = Ledger(database_url)
    runs = [start_run(manifest, database_url, env, "--concurrency", "6", "--no-prefect") for _ in range(2)]
    try:
        # 5xx start once both runs passed their start-up check (a run that cannot reach the
        # service at all fails fast by design) and hold their first requests in flight.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with ledger.engine.connect() as conn:
                if conn.exec_driver_sql("SELECT count(*) FROM runs").scalar() == 2:
                    break
            assert all(p.poll() is None for p in runs), [finish(p) for p in runs]
            time.sleep(0.05)
        emulator.set_faults(latency_ms=50, error_rate=0.6)
        results = [finish(p) for p in runs]
    finally:
        for p in runs:
            if p.poll() is None:
                p.kill()
    emulator.reset_faults()
    for code, out, err in results:
        assert code == 0, (out, err)
        assert "incomplete" not in out
    assert_one_check_per_document(ledger, emulator, key, n_text + n_large)
    ledger.close()


CRASHING_RUN = textwrap.dedent(
    """
    import asyncio, sys, time
    from doccheck.ledger import Ledger

    original = Ledger.mark_submitted
    calls = {"n": 0}

    def stalling(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] >= 4:
            print("STALLED", flush=True)
            time.sleep(3600)  # the event loop stops here: answers in flight are never recorded
        return original(self, *args, **kwargs)

    Ledger.mark_submitted = stalling
    import doccheck.ledger as bulk  # the answers' rounds, read here when a batch starts: the same stall point
    original_round = bulk.record_answers_and_claims  # a round: answers + next claims, one transaction

    def stalling_round(ledger, items):
        calls["n"] += sum(isinstance(item, bulk.Answer) for item in items)
        if calls["n"] >= 4:
            print("STALLED", flush=True)
            time.sleep(3600)  # the ledger's writer stops here: answers in flight are never recorded
        return original_round(ledger, items)

    bulk.record_answers_and_claims = stalling_round
    from doccheck.pipeline._options import RunOptions
    from prefect_doccheck.flows.bulk_check import bulk_check

    manifest, db_url, base_url = sys.argv[1:4]
    asyncio.run(bulk_check(**RunOptions.from_flat(manifest=manifest, out_dir="reports", campaign="course", base_url=base_url,
                           database_url=db_url, concurrency=6, wait=False).flow_parameters()))
    """
)


def crash_flow(
    script: str, tmp_path: Path, env: dict[str, str], *args: str, emulator: EmulatorHandle, key: str, checks: int
) -> None:
    """Run ``script`` (a flow run with a stall patched in) until it prints ``STALLED`` and the
    service holds ``checks`` checks (20 s at most), then SIGKILL it."""
    path = tmp_path / "crashing_run.py"
    path.write_text(script)
    proc = subprocess.Popen([sys.executable, str(path), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert "STALLED" in line, (line, proc.wait(timeout=30), proc.stderr.read())
        until = time.monotonic() + 20
        while emulator.account_state(key)["checks"] < checks and time.monotonic() < until:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()


def expire_claims(ledger: Ledger) -> None:
    """The killed run's claims expired (a 120 s lease on this side's clock, which the
    emulator's clock cannot move): a resume need not wait them out."""
    with ledger.engine.begin() as conn:
        conn.execute(ClaimRow.__table__.update().values(expires_at=datetime.now(UTC) - timedelta(days=2)))


def test_crash_in_flight_resumed_after_two_days_adopts_instead_of_rebilling(
    prefect_server: Any, emulator: EmulatorHandle, database_url: str, tmp_path: Path
) -> None:
    """Defect 2: a run SIGKILLed with requests in flight leaves rows `submitting` whose
    checks exist; two days later (past the 24 h key retention) the resume must find them
    in GET /checks by their reference instead of creating and billing them again."""
    key = emulator.new_account()
    n_docs = 20
    manifest = write_manifest(tmp_path, n_docs)
    env = cli_env(emulator, key)
    emulator.set_faults(latency_ms=200)  # keep several requests in flight at the kill
    # The 4th answer stalls the run's event loop; the requests already sent still reach
    # the service and create their checks, which the run never records.
    crash_flow(CRASHING_RUN, tmp_path, env, str(manifest), database_url, emulator.base_url, emulator=emulator, key=key,
               checks=6)  # fmt: skip
    emulator.reset_faults()
    ledger = Ledger(database_url)
    with ledger.engine.connect() as conn:
        left = conn.exec_driver_sql(
            "SELECT count(*) FROM submissions WHERE state IN ('submitting', 'uploading') AND check_id IS NULL"
        ).scalar()
    at_crash = emulator.account_state(key)["checks"]
    assert left >= 2 and at_crash > 3, (left, at_crash)  # answered at the service, unknown to the ledger

    # Two days pass: the service forgets the keys, and the dead run's claims (a 120 s
    # lease on this side's clock, which the emulator's clock cannot move) have expired.
    emulator.advance(2 * 86400)
    expire_claims(ledger)
    code, out, err = run_in_process(manifest, database_url, env)  # a plain rerun: no process of its own needed
    assert code == 0, (out, err)
    assert_one_check_per_document(ledger, emulator, key, n_docs)
    ledger.close()


HELD_RECORDING_RUN = textwrap.dedent(
    """
    import asyncio, sys, threading
    from doccheck.pipeline import _overlap as overlap

    real = overlap.record_and_match

    def held(ledger, options, recording, documents):
        def gated():
            for i, doc in enumerate(documents):
                if i == 20:  # rows 1-20 (two batches) are committed and being sent
                    print("STALLED", flush=True)
                    threading.Event().wait()  # the recording never goes on: killed mid-file
                yield doc

        return real(ledger, options, recording, gated())

    overlap.record_and_match = held
    from doccheck.pipeline._options import RunOptions
    from prefect_doccheck.flows.bulk_check import bulk_check

    manifest, db_url, base_url, out_dir = sys.argv[1:5]
    asyncio.run(bulk_check(**RunOptions.from_flat(manifest=manifest, out_dir=out_dir, campaign="course", base_url=base_url,
                           database_url=db_url, concurrency=4, batch_size=10, wait=False).flow_parameters()))
    """
)


def test_flow_killed_mid_recording_with_requests_in_flight_resumes_one_check_each(
    prefect_server: Any, emulator: EmulatorHandle, database_url: str, tmp_path: Path
) -> None:
    """Issue 26: the flow sends its first batches while the manifest is still recorded. SIGKILLed
    there (the recording held after two batches, requests in flight), a plain rerun (a flow run
    too) records the whole manifest and sends only what the service has not created: one check
    and one charge a document."""
    key = emulator.new_account()
    n_docs = 40
    manifest = write_manifest(tmp_path, n_docs)
    env = cli_env(emulator, key)
    emulator.set_faults(latency_ms=200)  # several requests in flight at the kill
    crash_flow(HELD_RECORDING_RUN, tmp_path, env, str(manifest), database_url, emulator.base_url,
               str(tmp_path / "reports"), emulator=emulator, key=key, checks=6)  # fmt: skip
    emulator.reset_faults()
    ledger = Ledger(database_url)
    with ledger.engine.connect() as conn:
        recorded = conn.exec_driver_sql("SELECT count(*) FROM documents").scalar()
    at_crash = emulator.account_state(key)["checks"]
    assert recorded == 20 and 0 < at_crash < recorded, (recorded, at_crash)  # sent before the recording ended

    expire_claims(ledger)
    code, out, err = run_in_process(manifest, database_url, env, flow=True)  # a plain rerun, a flow run too
    assert code == 0 and "Prefect flow run" in out, (out, err)
    assert_one_check_per_document(ledger, emulator, key, n_docs)
    ledger.close()


def test_rate_limit_storm_is_ridden_out(emulator: EmulatorHandle, tmp_path: Path) -> None:
    """Defect 5: 5 requests/s against concurrency 16. Before: a quarter of the rows ended
    `failed rate_limited` in a run that said `finished` and exited 0. (The command in this
    process, without a flow: the pacing is the library's, and nothing here needs a process.)"""
    key = emulator.new_account()
    n_docs = 40
    manifest = write_manifest(tmp_path, n_docs)
    db_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    emulator.set_faults(rate_limit_per_s=5)
    code, out, err = run_in_process(manifest, db_url, cli_env(emulator, key), "--concurrency", "16")
    emulator.reset_faults()
    assert code == 0, (out, err)
    ledger = Ledger(db_url)
    assert_one_check_per_document(ledger, emulator, key, n_docs)
    ledger.close()


def test_unsent_at_the_deadline_exits_3_with_a_hint_and_a_rerun_finishes(
    emulator: EmulatorHandle, tmp_path: Path
) -> None:
    """Defect 5: what the service keeps refusing with 429 until the submit deadline is
    `retry_later` (not `failed`), the run says incomplete and exits 3 with the command to
    continue; that command then sends the rest, one check per document. (Both commands in this
    process, without a flow: nothing here needs a process of its own.)"""
    key = emulator.new_account()
    n_docs = 12
    manifest = write_manifest(tmp_path, n_docs)
    db_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    env = cli_env(emulator, key)
    emulator.set_faults(rate_limit_per_s=1)
    code, out, err = run_in_process(manifest, db_url, env, "--concurrency", "8", "--submit-deadline", "1")
    emulator.reset_faults()
    assert code == 3, (out, err)
    assert "incomplete" in out and "doccheck run" in out and "--campaign course" in out, out
    ledger = Ledger(db_url)
    with ledger.engine.connect() as conn:
        states = dict(conn.exec_driver_sql("SELECT state, count(*) FROM submissions GROUP BY state").all())
    assert states.get("retry_later", 0) > 0 and "failed" not in states, states
    subs = pd.read_parquet(tmp_path / "reports" / "latest" / "submissions.parquet")
    assert (subs["status"] == "retry_later").sum() == states["retry_later"]

    code, out, err = run_in_process(manifest, db_url, env)
    assert code == 0, (out, err)
    assert_one_check_per_document(ledger, emulator, key, n_docs)
    ledger.close()
