"""``doccheck run`` stopped as a scheduler stops it: a real process, real emulator, real
Prefect server. SIGTERM (to the process or to its whole process group, as systemd and
container runtimes send it) and SIGINT while the run waits for results end with ONE line,
the resume hint and exit 143/130, no traceback; the rerun is exact (one check per document).
The stop needs the real process; the rerun is the same command run in this process (typer's
CliRunner), which saves a process's seconds of imports per case."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.factories import doccheck_in_process
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

DOCS = 3


@pytest.fixture(autouse=True)
def signals_as_a_shell_leaves_them() -> Iterator[None]:
    """The run starts with SIGINT and SIGTERM as a shell leaves them: an ignored signal survives
    exec, so a disposition an earlier test left in this worker (a command or a flow run in its
    process) would reach the run and the signal never arrive: on main, run on two workers beside
    test_cli_run, test_bulk_check and the profile money matrix, both SIGINT cases timed out so.
    The worker's own are put back."""
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _env(emulator: EmulatorHandle, key: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    env.update(DOCCHECK_BASE_URL=emulator.base_url, DOCCHECK_API_KEY=key, COLUMNS="200",
               DOCCHECK_DATABASE_URL=f"sqlite:///{tmp_path / 'ledger.db'}")  # fmt: skip
    return env


def _args(tmp_path: Path, mode: str = "--prefect") -> list[str]:
    manifest = tmp_path / "sig.csv"
    rows = [{"document_id": f"s-{i}", "text": f"Essay {i} on tides and harbours. " * 30} for i in range(DOCS)]
    pd.DataFrame(rows).to_csv(manifest, index=False)
    return [sys.executable, "-m", "doccheck.cli", "run", str(manifest), "--out", "out", "--grace-seconds", "0",
            "--poll-interval", "0.2", "--wait-timeout", "600", "--no-progress", mode]  # fmt: skip


@pytest.mark.parametrize(("signum", "group", "code"), [(signal.SIGTERM, False, 143), (signal.SIGTERM, True, 143),
                                                       (signal.SIGINT, False, 130)])  # fmt: skip
@pytest.mark.parametrize("mode", ["--prefect", "--no-prefect"])  # a flow run, and the run in this process
def test_stop_while_waiting_then_rerun(
    prefect_server: object, emulator_faults: EmulatorHandle, tmp_path: Path, signum: int, group: bool, code: int,
    mode: str,
) -> None:  # fmt: skip
    emulator = emulator_faults
    key = emulator.new_account()
    emulator.set_faults(processing_seconds=3600)  # results never come: the run waits
    env = _env(emulator, key, tmp_path)
    proc = subprocess.Popen(_args(tmp_path, mode), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while emulator.account_state(key)["checks"] < DOCS:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        time.sleep(1.0)  # now in the wait for results
        os.killpg(proc.pid, signum) if group else proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "rerun the same command" in lines[0], err
    assert "Traceback" not in out + err and "TerminationSignal" not in out + err

    emulator.reset_faults()
    emulator.advance(7200)
    rerun = doccheck_in_process(_args(tmp_path, mode)[3:], env, cwd=tmp_path)  # the stop was the process's
    assert rerun.returncode == 0, rerun.stderr
    assert emulator.account_state(key)["checks"] == DOCS  # one check per document, none paid twice


@pytest.mark.parametrize("mode", ["--no-prefect", "--prefect"])  # in this process, and the flow's overlapped task
def test_sigterm_while_submitting_then_rerun(
    prefect_server: object, emulator_faults: EmulatorHandle, tmp_path: Path, mode: str
) -> None:
    """SIGTERM with requests in flight (a slow service): one line, exit 143; the rerun sends
    only what was not sent, and no document is paid twice."""
    emulator = emulator_faults
    key = emulator.new_account()
    emulator.set_faults(latency_ms=400)
    env = _env(emulator, key, tmp_path)
    manifest = tmp_path / "many.csv"
    rows = [{"document_id": f"m-{i}", "text": f"Essay {i} on canals and locks. " * 30} for i in range(40)]
    pd.DataFrame(rows).to_csv(manifest, index=False)
    args = [sys.executable, "-m", "doccheck.cli", "run", str(manifest), "--out", "out", "--no-wait",
            "--concurrency", "2", "--no-progress", mode]  # fmt: skip
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while emulator.account_state(key)["checks"] < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "rerun the same command" in lines[0] and "Traceback" not in out + err, err
    sent = emulator.account_state(key)["checks"]
    assert sent < 40  # stopped mid-submit

    emulator.reset_faults()
    rerun = doccheck_in_process(args[3:], env, cwd=tmp_path)  # the stop was the process's
    assert rerun.returncode == 0, rerun.stderr
    assert emulator.account_state(key)["checks"] == 40  # every document once, none paid twice
