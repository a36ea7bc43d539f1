"""``run_shards`` decisions with a scripted Prefect API (the real one is in
tests/integration/test_shards.py): idempotency keys per run and shard, a failed shard
started again under a ``:retry-K`` key, a shard on a silent worker marked CRASHED and
started again, results merged from the artifacts, and ``ShardsFailed`` after the retries."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any
from uuid import UUID, uuid4

import pytest
from prefect.client.schemas.objects import StateType

from doccheck.errors import ShardsFailed
from prefect_doccheck.flows import _fan_out as fan_out
from prefect_doccheck.flows.shard import SHARD_RESULT_DESCRIPTION


class FakeAPI:
    """Flow runs whose states follow a script per (shard, attempt)."""

    def __init__(self, script: dict[tuple[int, int], list[StateType]], worker_beat_age: dict[str, float],
                 nameless: dict[tuple[int, int], float] | None = None) -> None:  # fmt: skip
        self.script = script
        self.beat_age = worker_beat_age
        self.nameless = nameless or {}  # (shard, attempt): age of its state; taken by no named worker
        self.runs: dict[UUID, dict[str, Any]] = {}
        self.keys: list[str] = []
        self.forced: list[tuple[UUID, str]] = []

    async def run_deployment(self, *, name: str, parameters: dict[str, Any], idempotency_key: str, **kw: Any) -> Any:
        self.keys.append(idempotency_key)
        attempt = sum(1 for r in self.runs.values() if r["shard"] == parameters["shard"])
        run_id = uuid4()
        self.runs[run_id] = {"shard": parameters["shard"], "attempt": attempt, "polls": 0}
        return SimpleNamespace(id=run_id)

    # -- the client ------------------------------------------------------------------
    async def __aenter__(self) -> FakeAPI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def read_flow_run(self, run_id: UUID) -> Any:
        run = self.runs[run_id]
        states = self.script.get((run["shard"], run["attempt"]), [StateType.COMPLETED])
        kind = states[min(run["polls"], len(states) - 1)]
        run["polls"] += 1
        if run.get("crashed"):
            kind = StateType.CRASHED
        labels = {"prefect.worker.name": f"w{run['shard'] % 2}"}
        age = self.nameless.get((run["shard"], run["attempt"]))
        if age is not None:
            labels = {}
        stamp = datetime.now(UTC) - timedelta(seconds=age or 0)
        return SimpleNamespace(
            id=run_id, state=SimpleNamespace(type=kind, name=kind.value.title(), timestamp=stamp),
            labels=labels, work_pool_name="pool",
        )  # fmt: skip

    async def read_workers_for_work_pool(self, pool: str) -> list[Any]:
        now = datetime.now(UTC)
        return [SimpleNamespace(name=n, last_heartbeat_time=now - timedelta(seconds=age), heartbeat_interval_seconds=2)
                for n, age in self.beat_age.items()]  # fmt: skip

    async def set_flow_run_state(self, run_id: UUID, state: Any, force: bool = False) -> None:
        self.runs[run_id]["crashed"] = True
        self.forced.append((run_id, state.type.value))

    async def read_artifacts(self, artifact_filter: Any) -> list[Any]:
        (run_id,) = artifact_filter.flow_run_id.any_
        shard = self.runs[run_id]["shard"]
        row = {"shard": shard, "total": 10, "submitted": 10, "cost_cents": 5}
        return [SimpleNamespace(description=SHARD_RESULT_DESCRIPTION, data=json.dumps([row]))]


def _run(api: FakeAPI, monkeypatch: pytest.MonkeyPatch, shards: int, max_retries: int = 2) -> Any:
    monkeypatch.setattr(fan_out, "arun_deployment", api.run_deployment)
    monkeypatch.setattr(fan_out, "get_client", lambda: api)
    monkeypatch.setattr(fan_out, "_parent_id", lambda: "parent")
    return asyncio.run(
        fan_out.run_shards(
            run_id="run1", shards=shards, parameters={"manifest": "m.csv"}, max_retries=max_retries, poll_interval=0
        )  # fmt: skip
    )


def test_all_shards_complete_and_results_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeAPI({}, {"w0": 0, "w1": 0})
    total = _run(api, monkeypatch, 3)
    assert api.keys == ["parent:run1:shard-0", "parent:run1:shard-1", "parent:run1:shard-2"]
    assert (total.total, total.submitted, total.cost_cents) == (30, 30, 15)


def test_a_failed_shard_is_started_again_under_a_retry_key(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeAPI({(1, 0): [StateType.RUNNING, StateType.FAILED]}, {"w0": 0, "w1": 0})
    total = _run(api, monkeypatch, 2)
    assert api.keys == ["parent:run1:shard-0", "parent:run1:shard-1", "parent:run1:shard-1:retry-1"]
    assert total.total == 20 and not api.forced


@pytest.mark.parametrize(
    ("state", "beat_age", "nameless"),
    [
        # w1 (odd shards) stopped sending heartbeats 10 min ago: its running shard is lost.
        (StateType.RUNNING, {"w0": 0, "w1": 600}, {}),
        # Its worker died between taking it (PENDING) and naming itself on it: nothing else would end it.
        (StateType.PENDING, {"w0": 0, "w1": 0}, {(1, 0): 31}),
    ],
    ids=["silent worker", "pending under no worker's name"],
)
def test_a_lost_shard_is_crashed_and_rerun(
    monkeypatch: pytest.MonkeyPatch, state: StateType, beat_age: dict[str, float],
    nameless: dict[tuple[int, int], float],
) -> None:  # fmt: skip
    monkeypatch.setenv("DOCCHECK_SHARD_LOST_AFTER_SECONDS", "30")
    api = FakeAPI({(1, 0): [state] * 100}, beat_age, nameless=nameless)
    total = _run(api, monkeypatch, 2)
    assert api.keys[-1] == "parent:run1:shard-1:retry-1"
    assert [forced for _, forced in api.forced] == ["CRASHED"]
    assert total.total == 20


def test_a_shard_pending_briefly_under_no_worker_name_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_SHARD_LOST_AFTER_SECONDS", "30")
    script = {(0, 0): [StateType.PENDING, StateType.PENDING, StateType.RUNNING, StateType.COMPLETED]}
    api = FakeAPI(script, {"w0": 0, "w1": 0}, nameless={(0, 0): 5})
    assert _run(api, monkeypatch, 2).total == 20
    assert len(api.keys) == 2 and not api.forced


def test_shards_failed_after_their_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    script = {(0, k): [StateType.CRASHED] for k in range(3)}
    api = FakeAPI(script, {"w0": 0, "w1": 0})
    with pytest.raises(ShardsFailed, match=r"shard 0: Crashed after 3 runs.*run the same command again"):
        _run(api, monkeypatch, 2, max_retries=2)
    assert api.keys.count("parent:run1:shard-1") == 1  # the good shard ran once, and finished


def test_a_shard_no_worker_takes_is_cancelled_and_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_SHARD_PICKUP_SECONDS", "0")
    api = FakeAPI({(1, 0): [StateType.SCHEDULED] * 100}, {"w0": 0, "w1": 0})
    total = _run(api, monkeypatch, 2)
    assert api.keys[-1] == "parent:run1:shard-1:retry-1"
    assert [state for _, state in api.forced] == ["CANCELLED"]  # no worker may take the old run later
    assert total.total == 20


def test_a_shard_no_worker_ever_takes_fails_naming_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_SHARD_PICKUP_SECONDS", "0")
    api = FakeAPI({(0, k): [StateType.SCHEDULED] * 100 for k in range(2)}, {"w0": 0, "w1": 0})
    with pytest.raises(ShardsFailed, match=r"shard 0: not taken by any worker of pool 'pool' within 0 s.*"
                                                   r"are its workers running\?\) after 2 runs"):  # fmt: skip
        _run(api, monkeypatch, 2, max_retries=1)


def test_a_shard_waiting_briefly_for_a_worker_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCCHECK_SHARD_PICKUP_SECONDS", raising=False)  # default: 600 s
    api = FakeAPI({(0, 0): [StateType.SCHEDULED, StateType.SCHEDULED, StateType.RUNNING, StateType.COMPLETED]},
                  {"w0": 0, "w1": 0})  # fmt: skip
    assert _run(api, monkeypatch, 2).total == 20
    assert len(api.keys) == 2 and not api.forced


def test_a_bad_shard_setting_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every field's bad value is covered in test_settings.py; here: the flow reads the model."""
    monkeypatch.setenv("DOCCHECK_SHARD_LOST_AFTER_SECONDS", "fast")
    with pytest.raises(ValueError, match="DOCCHECK_SHARD_LOST_AFTER_SECONDS='fast'"):
        fan_out.lost_after(10)


@pytest.mark.parametrize("manifest", ["s3://term-data/course-a/manifest.csv", "course-a/manifest.csv"])
def test_the_shards_get_the_manifest_as_a_worker_elsewhere_can_read_it(
    manifest: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bucket's URL as written (a container's worker shares nothing else); a path made absolute."""
    from pathlib import Path

    from doccheck.pipeline import BatchResult, SubmissionOptions

    sent: dict[str, Any] = {}

    async def run_shards(*, parameters: dict[str, Any], **_: Any) -> BatchResult:
        sent.update(parameters)
        return BatchResult()

    monkeypatch.setattr(fan_out, "run_shards", run_shards)
    monkeypatch.delenv("DOCCHECK_RATE_LIMIT_PER_SECOND", raising=False)
    asyncio.run(
        fan_out.submit_sharded(
            run_id="run1", manifest=manifest, campaign="c", products=["ai"], metadata_columns=[], key_source=None,
            base_url="http://127.0.0.1:9/api/v1", database_url=None, submission=SubmissionOptions(shards=2),
        )
    )  # fmt: skip
    expected = manifest if manifest.startswith("s3://") else str(Path(manifest).resolve())
    assert sent["manifest"] == expected
