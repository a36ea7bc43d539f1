"""``doccheck run`` / ``doccheck collect`` as a user runs them: a subprocess, real emulator,
real Prefect server. Exit 0 when the run finished (row failures are data), 1 with ONE line
and no traceback for configuration and fatal errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.factories import doccheck_in_process
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration]

NOISE = ("Traceback", "CancelledError", "database is locked", "Error logging to API", "Exception")


def _manifest(folder: Path) -> Path:
    rows = [
        {"document_id": "c-1", "text": "An essay about rivers and floods in growing cities. " * 12},
        {"document_id": "c-2", "text": "A short answer on congestion pricing and its effects. " * 4},
        {"document_id": "c-3", "text": ""},
    ]
    path = folder / "course.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doccheck.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=180,
    )


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    env.update(extra)
    env["COLUMNS"] = "200"
    return env


def _assert_one_line_error(out: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert out.returncode == 1, (out.stdout, out.stderr)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error:") and fragment in lines[0], lines[0]
    for word in NOISE:
        assert word not in out.stdout + out.stderr


def _in_process(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the typer app in this process (configuration errors exit before any flow runs)."""
    return doccheck_in_process(args, env)


def test_configuration_errors_are_one_line(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path)
    # One real subprocess (what a user sees), the other cases in process (fast).
    _assert_one_line_error(_cli(["run", str(manifest)], _env(), tmp_path), "DOCCHECK_BASE_URL")
    env = {"DOCCHECK_BASE_URL": "http://127.0.0.1:9/api/v1"}
    _assert_one_line_error(_in_process(["run", str(manifest)], env), "DOCCHECK_API_KEY")
    env["DOCCHECK_API_KEY"] = "sk_whatever"
    _assert_one_line_error(_in_process(["run", str(tmp_path / "nope.csv")], env), "nope.csv")
    _assert_one_line_error(_in_process(["collect"], env), "--campaign or --run-id")
    _assert_one_line_error(_in_process(["collect", "--campaign", "a", "--run-id", "b"], env), "exactly one")


@pytest.mark.prefect_server
def test_unknown_key_is_a_fatal_one_line_error(
    prefect_server: object, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    env = _env(DOCCHECK_BASE_URL=emulator.base_url, DOCCHECK_API_KEY="sk_not_an_account")
    out = _cli(["run", str(_manifest(tmp_path)), "--database-url", f"sqlite:///{tmp_path / 'l.db'}"], env, tmp_path)
    _assert_one_line_error(out, "401")
    assert "sk_not_an_account" not in out.stdout + out.stderr


@pytest.mark.prefect_server
def test_run_dry_run_then_real_run_then_collect(
    prefect_server: object, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    key = emulator.new_account()
    config = {
        "DOCCHECK_BASE_URL": emulator.base_url,
        "DOCCHECK_API_KEY": key,
        "DOCCHECK_DATABASE_URL": f"sqlite:///{tmp_path / 'ledger.db'}",
    }
    env = _env(**config)
    manifest = _manifest(tmp_path)

    dry = _in_process(["run", str(manifest), "--dry-run", "--products", "ai,similarity"], config)
    assert dry.returncode == 0, dry.stderr
    assert "dry run: nothing was sent" in dry.stdout and "neither" in dry.stdout  # the reject reason
    assert "text 2" in dry.stdout
    assert emulator.account_state(key)["checks"] == 0

    run = _cli(
        ["run", str(manifest), "--out", "out", "--grace-seconds", "0", "--poll-interval", "0.1", "--no-progress"],
        env,
        tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert "finished" in run.stdout and "new checks" in run.stdout
    for word in NOISE:
        assert word not in run.stdout + run.stderr
    assert key not in run.stdout + run.stderr
    assert emulator.account_state(key)["checks"] == 2
    subs = pq.read_table(tmp_path / "out" / "latest" / "submissions.parquet").to_pandas()
    assert sorted(subs["status"]) == ["rejected", "submitted", "submitted"]

    collect = _in_process(["collect", "--campaign", "course", "--out", str(tmp_path / "out")], config)
    assert collect.returncode == 0, collect.stderr
    assert "finished" in collect.stdout
    assert emulator.account_state(key)["checks"] == 2


def test_cli_dry_run_needs_no_prefect_server(tmp_path: Path) -> None:
    """``doccheck run --dry-run`` with PREFECT_API_URL pointing nowhere still plans (no flow)."""
    doccheck = Path(sys.executable).parent / "doccheck"
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api", "COLUMNS": "200",
           "DOCCHECK_DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}"}  # fmt: skip
    ok = subprocess.run([str(doccheck), "run", str(Path(__file__).parents[2] / "sample_data" / "manifest.csv"), "--dry-run"], capture_output=True, text=True, env=env,
                        cwd=tmp_path, timeout=120)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "dry run: nothing was sent." in ok.stdout and "already used by row 3" in ok.stdout
    assert not (tmp_path / "none.db").exists()  # a dry run leaves no ledger behind
    bad = tmp_path / "bad.csv"
    bad.write_text("id,text\n1,hello\n", encoding="utf-8")
    failed = subprocess.run([str(doccheck), "run", str(bad), "--dry-run"], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=120)  # fmt: skip
    assert failed.returncode == 1 and "required column 'document_id' is missing" in failed.stderr
