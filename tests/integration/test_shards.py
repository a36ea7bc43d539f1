"""Scale out (issue 12): one run in six shards on three process workers, one killed mid-shard.

Everything is real: the session's ``prefect server``, a fresh PostgreSQL database, the
emulator over HTTP, a process work pool with the shard deployment deployed from this
checkout by ``prefect deploy`` (``deployments/prefect.yaml``), and three ``prefect worker
start`` processes. The parent ``bulk_check(..., shards=6)`` runs in this process. Once
the shards are under way, one worker is SIGKILLed together with its flow runs, as a
machine dying would. The test then shows: every document has exactly one check at the
emulator, the shards ran on at least two workers, the lost shards were run again (their
old runs marked CRASHED), and the reports list every document with its check.

Where its time goes (docs/testing.md has the figures): the shards' flow-run processes
starting, and the wait for the dead worker's heartbeats to go stale. So the service
answers slowly (1 s a request) until the kill, which keeps every shard mid-work with
requests in flight however the processes' starts spread, and at once after it; 300
documents (50 a shard) are enough for that; workers beat every second and a shard is
lost 20 s after its worker's last beat (the session's Prefect server runs on PostgreSQL:
on SQLite it stalled for a minute under load, and live workers looked dead).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import psutil
import pyarrow.parquet as pq
import pytest

from tests.factories import flow_kwargs
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.fleet import Worker, create_pool, deploy_shard, kill_worker, start_worker, stop_worker
from tests.fixtures.prefect_server import eventually, server_events

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.prefect_server, pytest.mark.slow]

DOCS = 300
SHARDS = 6
# The service's answer time until the kill: a shard of 50 (batches of 10, 4 at a time) takes 15 s or more.
SLOW_MS = 1000
WORDS = ("river", "mill", "bridge", "market", "flood", "harvest", "lantern", "orchard", "quarry", "meadow",
         "harbour", "beacon", "granary", "ferry", "willow", "thatch")  # fmt: skip


def _manifest(folder: Path, count: int) -> Path:
    rows = []
    for i in range(count):
        words = " ".join(WORDS[(i >> (2 * j)) % len(WORDS)] for j in range(12))
        rows.append({"document_id": f"s-{i:05d}", "text": f"Essay {i}. {words}. " * 4, "products": "ai"})
    path = folder / "manifest.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _api_records(api_url: str, flow_run_ids: list[Any]) -> dict[str, list[Any]]:
    """The flow runs, their task runs and logs, and every task-run and flow-run event."""
    ids = [str(i) for i in flow_run_ids]
    with httpx.Client(trust_env=False, timeout=30) as http:

        def read(path: str, query: dict[str, Any]) -> list[Any]:
            answer = http.post(f"{api_url}/{path}/filter", json=query)
            answer.raise_for_status()
            return list(answer.json())

        return {
            "flow runs": read("flow_runs", {"flow_runs": {"id": {"any_": ids}}}),
            "task runs": read("task_runs", {"flow_runs": {"id": {"any_": ids}}}),
            "logs": read("logs", {"logs": {"flow_run_id": {"any_": ids}}}),
            "events": server_events(api_url, ["prefect.task-run.", "prefect.flow-run."]),
        }


def _unfinished_on(pool: str, worker: Worker) -> bool:
    """Whether a shard run on ``worker`` has not completed (read after the worker's kill:
    a run completes only by its own process's report, so a dead one stays unfinished)."""
    return any(
        (r.labels or {}).get("prefect.worker.name") == worker.name and not (r.state and r.state.is_completed())
        for r in _shard_runs(pool)
    )


def _shard_runs(pool: str) -> list[Any]:
    from prefect import get_client
    from prefect.client.schemas.filters import WorkPoolFilter, WorkPoolFilterName

    with get_client(sync_client=True) as client:
        return list(
            client.read_flow_runs(work_pool_filter=WorkPoolFilter(name=WorkPoolFilterName(any_=[pool])), limit=200)
        )


@pytest.fixture
def fleet(
    prefect_server: Any, isolated_emulator: EmulatorHandle, tmp_path: Path
) -> Iterator[tuple[str, str, list[Worker]]]:
    pool = f"shards-{uuid.uuid4().hex[:6]}"
    key = isolated_emulator.new_account(balance_cents=10**9)
    create_pool(prefect_server.api_url, pool)
    env = {"DOCCHECK_API_KEY": key, "DOCCHECK_BASE_URL": isolated_emulator.base_url}
    workers = [  # started before the deployment: they start up while `prefect deploy` runs
        start_worker(prefect_server.api_url, pool, f"{pool}-w{i}", tmp_path, env, limit=2, heartbeat_seconds=1)
        for i in range(3)
    ]
    try:
        deploy_shard(prefect_server.api_url, pool)
        yield pool, key, workers
    finally:
        for worker in workers:
            stop_worker(worker)


def _runs_a_flow(worker: Worker) -> bool:
    """True when the worker has a child process: the flow run it is executing."""
    try:
        return bool(psutil.Process(worker.process.pid).children())
    except psutil.NoSuchProcess:
        return False


@pytest.mark.timeout(600)  # ~1 min on an idle machine, 2-3 on a loaded one
def test_six_shards_three_workers_one_killed_exactly_one_check_each(
    fleet: tuple[str, str, list[Worker]],
    prefect_server: Any,
    isolated_emulator: EmulatorHandle,
    postgres_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect_doccheck.flows.bulk_check import bulk_check

    pool, key, workers = fleet
    emulator = isolated_emulator
    emulator.set_faults(latency_ms=SLOW_MS)  # until the kill: every shard mid-work, requests in flight
    manifest = _manifest(tmp_path, DOCS)
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    monkeypatch.setenv("DOCCHECK_CLAIM_LEASE_SECONDS", "15")  # a dead worker's keys free after 15 s
    # heartbeats every second; lost after 20 s (2.5 s was the stalest live worker seen at a load
    # of 15; a shard run that no worker has named itself on is lost after the same time)
    monkeypatch.setenv("DOCCHECK_SHARD_LOST_AFTER_SECONDS", "20")
    # Up to two workers are killed (a missed kill, then the victim), and a shard can be on each
    # in turn: one run per kill plus the one that finishes (the default of 2 retries failed a
    # run under load with "shard 0: lost ... after 3 runs").
    monkeypatch.setenv("DOCCHECK_SHARD_RETRIES", str(len(workers)))
    outcome: dict[str, Any] = {}

    def parent() -> None:
        try:
            outcome["summary"] = asyncio.run(
                bulk_check(
                    **flow_kwargs(
                        manifest=str(manifest),
                        products=["ai"],
                        out_dir=str(tmp_path / "reports"),
                        campaign=f"fleet-{pool}",
                        database_url=postgres_database,
                        base_url=emulator.base_url,
                        shards=SHARDS,
                        batch_size=10,
                        concurrency=4,
                        wait=True,
                        wait_timeout=180,
                        poll_interval=1,
                    )
                )  # fmt: skip
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            outcome["error"] = exc

    started = time.monotonic()
    thread = threading.Thread(target=parent, daemon=True)
    thread.start()

    # Kill one worker while it runs a shard and the checks are still coming in. The API's
    # "running" lags the processes: a shard seen running may have finished by the kill (CI saw
    # it on a loaded machine). A kill that took no flow-run process with it missed: the worker
    # is gone all the same, and another one with a shard running is chosen while one is spare.
    victim: Worker | None = None
    missed: list[Worker] = []
    seen: list[tuple[int, int, int]] = []  # (seconds, checks, shards running): the failure message
    while victim is None and time.monotonic() - started < 300 and thread.is_alive():
        time.sleep(0.5)
        created = emulator.account_state(key)["checks"]
        running = [r for r in _shard_runs(pool) if r.state and r.state.is_running()]
        seen.append((int(time.monotonic() - started), created, len(running)))
        on_worker = {(r.labels or {}).get("prefect.worker.name") for r in running} - {None}
        alive = [w for w in workers if w not in missed]
        candidates = [w for w in alive if w.name in on_worker and _runs_a_flow(w)]
        if created >= DOCS // 10 and created < DOCS * 0.7 and candidates and len(alive) > 1:
            # A hit takes a flow-run process with the worker and leaves one of its shards
            # unfinished: a shard that wrote COMPLETED just before the kill (its process still
            # exiting) proves nothing about a lost shard, so that kill missed too.
            if len(kill_worker(candidates[0])) > 1 and _unfinished_on(pool, candidates[0]):
                victim = candidates[0]
                killed_at_checks = created
            else:
                missed.append(candidates[0])
    emulator.set_faults(latency_ms=0)  # the rest, the reruns and the polls at full speed
    logs = "\n".join(f"--- {w.name}\n{w.log()[-3000:]}" for w in workers)
    assert victim is not None, f"no shard was seen running mid-way: {seen[::10]}; worker logs:\n{logs}"

    thread.join(timeout=360)
    if thread.is_alive():
        shard_runs = [(r.parameters.get("shard"), r.state_name, (r.labels or {}).get("prefect.worker.name"))
                      for r in _shard_runs(pool)]  # fmt: skip
        logs = "\n".join(f"--- {w.name}\n{w.log()[-3000:]}" for w in workers)
        pytest.fail(f"the parent flow did not finish; killed {victim.name}; shard runs (shard, state, worker): "
                    f"{shard_runs}; worker logs now:\n{logs}")  # fmt: skip
    assert "error" not in outcome, f"{outcome.get('error')!r}\n{logs}"
    summary = outcome["summary"]

    # Exactly one check per document at the service, whatever the killed shard had sent.
    state = emulator.account_state(key)
    assert state["checks"] == DOCS, (state, killed_at_checks)
    assert summary.status == "finished" and summary.documents == DOCS and summary.pending == 0

    # The reports list every document with its own check.
    submissions = pq.read_table(Path(summary.report_dir) / "submissions.parquet").to_pandas()
    assert len(submissions) == DOCS
    assert submissions["check_id"].notna().all()
    assert submissions["check_id"].nunique() == DOCS
    assert int(submissions["charged_cents"].sum()) == state["charged_cents"]

    # Shards ran on several workers; the killed worker's shards were marked CRASHED and rerun.
    # (A run wrongly called lost on a busy machine may still complete: harmless, as the
    # checks above show, so only "at least" is asserted about completed runs.)
    runs = _shard_runs(pool)
    worker_of = {r.id: (r.labels or {}).get("prefect.worker.name") for r in runs}
    completed = [r for r in runs if r.state and r.state.is_completed()]
    assert {int(r.parameters["shard"]) for r in completed} == set(range(SHARDS))
    assert len({worker_of[r.id] for r in completed}) >= 2
    on_victim = {int(r.parameters["shard"]) for r in runs if worker_of[r.id] == victim.name}
    assert on_victim, "the killed worker ran no shard"
    finished_there = {int(r.parameters["shard"]) for r in completed if worker_of[r.id] == victim.name}
    lost = on_victim - finished_there
    assert lost, "the killed worker was running no shard"
    crashed = [r for r in runs if r.state and r.state.is_crashed()]
    assert {int(r.parameters["shard"]) for r in crashed if worker_of[r.id] == victim.name} == lost
    for shard in lost:  # each shard the killed worker was running finished on another worker
        assert any(int(r.parameters["shard"]) == shard and worker_of[r.id] != victim.name for r in completed)
    # The shards got names and URLs, never the key.
    assert all(key not in repr(r.parameters) for r in runs)
    # A shard's batch tasks take its documents in process; no text reaches the Prefect API.
    essay = pd.read_csv(manifest)["text"][17][:40]
    records = eventually(  # task runs and events reach the server from background workers
        lambda: _api_records(prefect_server.api_url, [r.id for r in runs]),
        lambda found: any(t["name"].startswith("shard ") for t in found["task runs"]) and found["events"],
    )
    assert any(t["name"].startswith("shard ") for t in records["task runs"]) and records["events"], records["task runs"]
    for name, found in records.items():
        assert essay not in json.dumps(found), f"document text reached the Prefect API ({name})"
