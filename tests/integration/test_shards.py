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

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.factories import flow_kwargs
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.fleet import (
    Parent,
    Worker,
    create_pool,
    deploy_shard,
    kill_one_mid_shard,
    lost_shards_rerun,
    shard_runs,
    start_worker,
    stop_workers,
    tolerate_a_killed_worker,
    worker_logs,
)
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
        stop_workers(workers)


@pytest.mark.timeout(600)  # ~1 min on an idle machine, 2-3 on a loaded one
def test_six_shards_three_workers_one_killed_exactly_one_check_each(
    fleet: tuple[str, str, list[Worker]],
    prefect_server: Any,
    isolated_emulator: EmulatorHandle,
    postgres_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool, key, workers = fleet
    emulator = isolated_emulator
    emulator.set_faults(latency_ms=SLOW_MS)  # until the kill: every shard mid-work, requests in flight
    manifest = _manifest(tmp_path, DOCS)
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    tolerate_a_killed_worker(monkeypatch, len(workers))
    parent = Parent(flow_kwargs(
        manifest=str(manifest), products=["ai"], out_dir=str(tmp_path / "reports"), campaign=f"fleet-{pool}",
        database_url=postgres_database, base_url=emulator.base_url, shards=SHARDS, batch_size=10, concurrency=4,
        wait=True, wait_timeout=180, poll_interval=1,
    )).start()  # fmt: skip

    # Kill one worker while it runs a shard and the checks are still coming in.
    kill = kill_one_mid_shard(pool, workers, lambda: emulator.account_state(key)["checks"], low=DOCS // 10,
                              high=int(DOCS * 0.7), going=parent.going)  # fmt: skip
    emulator.set_faults(latency_ms=0)  # the rest, the reruns and the polls at full speed
    assert kill.victim is not None, f"no shard was seen running mid-way: {kill.seen[::10]}; worker logs:\n" + (
        worker_logs(workers))  # fmt: skip
    summary = parent.summary(pool, workers, timeout=360)

    # Exactly one check per document at the service, whatever the killed shard had sent.
    state = emulator.account_state(key)
    assert state["checks"] == DOCS, (state, kill.at_checks)
    assert summary.status == "finished" and summary.documents == DOCS and summary.pending == 0

    # The reports list every document with its own check.
    submissions = pq.read_table(Path(summary.report_dir) / "submissions.parquet").to_pandas()
    assert len(submissions) == DOCS
    assert submissions["check_id"].notna().all()
    assert submissions["check_id"].nunique() == DOCS
    assert int(submissions["charged_cents"].sum()) == state["charged_cents"]

    # Shards ran on several workers; the killed worker's shards were marked CRASHED and rerun.
    lost_shards_rerun(pool, kill.victim, SHARDS)
    runs = shard_runs(pool)
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
