"""``doccheck run`` with no Prefect server to watch runs in this process (issue 26): the same
reports, money and exit codes as the flow, no Prefect process started, no Prefect noise."""

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

NOISE = ("Traceback", "prefect", "Prefect", "Exception", "Error logging to API", "ephemeral")
COMPARED = ["document_id", "row_number", "status", "mode", "idempotency_key", "words", "cost_cents", "charged_cents"]


def _manifest(folder: Path) -> Path:
    rows = [
        {"document_id": f"n-{i}", "text": f"Essay {i} on rivers, mills and the towns that grew by them. " * 10}
        for i in range(6)
    ]
    rows.append({"document_id": "n-bad", "text": ""})
    path = folder / "course.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _run(
    args: list[str], *, cwd: Path, key: str, base_url: str, prefect_api: str | None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHECK_", "PREFECT_"))}
    env.update(DOCCHECK_BASE_URL=base_url, DOCCHECK_API_KEY=key, PREFECT_HOME=str(cwd / "prefect-home"), COLUMNS="200")
    if prefect_api:
        env["PREFECT_API_URL"] = prefect_api
    return subprocess.run(
        [sys.executable, "-m", "doccheck.cli", "run", *args], capture_output=True, text=True, env=env, cwd=cwd,
        timeout=300,
    )  # fmt: skip


def _submissions(out: Path) -> pd.DataFrame:
    table = pq.read_table(out / "latest" / "submissions.parquet").to_pandas()
    return table[COMPARED].sort_values("document_id").reset_index(drop=True)


@pytest.mark.prefect_server
@pytest.mark.slow
def test_a_run_without_a_server_equals_the_flow(
    prefect_server: object, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    common = ["--no-progress", "--grace-seconds", "0", "--poll-interval", "0.1", "--products", "ai,similarity"]
    results = {}
    # The run without a server is a process of its own (nothing of Prefect may start in it); the
    # flow and the sequential run are the same command in this process (what they print is read).
    runs = (("library", None, []), ("flow", "in process", ["--prefect"]),
            ("sequential", "in process", ["--no-prefect", "--no-overlap"]))  # fmt: skip
    for name, where, extra in runs:
        folder = tmp_path / name
        folder.mkdir()
        key = emulator.new_account()
        args = [str(_manifest(folder)), "--database-url", f"sqlite:///{folder / 'l.db'}", "--out", "out", *common,
                *extra]  # fmt: skip
        if where is None:
            done = _run(args, cwd=folder, key=key, base_url=emulator.base_url, prefect_api=None)
        else:
            env = {"DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": key}
            done = doccheck_in_process(["run", *args], env, cwd=folder)
        assert done.returncode == 0, done.stdout + done.stderr
        results[name] = (done, _submissions(folder / "out"), emulator.account_state(key))

    library, flow = results["library"], results["flow"]
    assert "this process (no Prefect server)" in library[0].stdout
    assert "Prefect flow run" in flow[0].stdout
    for word in NOISE:
        assert word not in library[0].stdout.replace("no Prefect server", "") + library[0].stderr
    assert not (tmp_path / "library" / "prefect-home").exists()  # Prefect never started, not even to read settings
    pd.testing.assert_frame_equal(library[1], flow[1])
    pd.testing.assert_frame_equal(library[1], results["sequential"][1])  # --no-overlap: the phases one by one
    assert library[2]["checks"] == flow[2]["checks"] == results["sequential"][2]["checks"] == 6
    assert library[2]["charged_cents"] == flow[2]["charged_cents"] == int(library[1]["cost_cents"].sum())
    for folder in ("library", "flow"):
        assert (tmp_path / folder / "out" / "latest" / "report.html").is_file()


def test_a_run_without_a_server_fails_on_one_line(emulator: EmulatorHandle, tmp_path: Path) -> None:
    done = _run([str(_manifest(tmp_path)), "--database-url", f"sqlite:///{tmp_path / 'l.db'}"], cwd=tmp_path,
                key="sk_not_an_account", base_url=emulator.base_url, prefect_api=None)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "401" in lines[0], done.stderr
    assert "Traceback" not in done.stdout + done.stderr and "sk_not_an_account" not in done.stdout + done.stderr


def test_shards_need_prefect(emulator: EmulatorHandle, tmp_path: Path) -> None:
    done = _run([str(_manifest(tmp_path)), "--no-prefect", "--shards", "2", "--database-url",
                 f"sqlite:///{tmp_path / 'l.db'}"], cwd=tmp_path, key=emulator.new_account(),
                base_url=emulator.base_url, prefect_api=None)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error:" in done.stderr and "Traceback" not in done.stderr


def test_collect_without_a_server(emulator: EmulatorHandle, tmp_path: Path) -> None:
    key = emulator.new_account()
    base = ["--database-url", f"sqlite:///{tmp_path / 'l.db'}", "--out", "out"]
    rules = ["--min-ai-words", "50", "--ai-band-high", "0.9"]  # the essays have 110 words: judged
    sent = doccheck_in_process(
        ["run", str(_manifest(tmp_path)), "--no-wait", "--no-progress", "--no-prefect", *rules, *base],
        {"DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": key},
        cwd=tmp_path,
    )  # fmt: skip  (the collect below is the process without Prefect)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    emulator.advance(60)  # every check finishes at the service
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHECK_", "PREFECT_"))}
    env.update(DOCCHECK_BASE_URL=emulator.base_url, DOCCHECK_API_KEY=key, PREFECT_HOME=str(tmp_path / "ph"),
               COLUMNS="200")  # fmt: skip
    collected = subprocess.run(
        [sys.executable, "-m", "doccheck.cli", "collect", "--campaign", "course", *base], capture_output=True,
        text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "finished" in collected.stdout and "this process (no Prefect server)" in collected.stdout
    assert "Traceback" not in collected.stdout + collected.stderr and not (tmp_path / "ph").exists()
    subs = pq.read_table(tmp_path / "out" / "latest" / "ai_results.parquet").to_pandas()
    assert len(subs) == 6 and set(subs["status"]) == {"completed"}
    assert emulator.account_state(key)["checks"] == 6
    # collect rewrote the page under the run's own rules (recorded with the run), not the defaults
    rows = pq.read_table(tmp_path / "out" / "latest" / "documents.parquet").to_pylist()
    bands = [r["ai_band"] for r in rows if r["status"] != "rejected"]
    assert len(bands) == 6 and "too_short" not in bands and None not in bands
    page = (tmp_path / "out" / "latest" / "report.html").read_text(encoding="utf-8")
    assert "under 50 words" in page and "from 0.9" in page
