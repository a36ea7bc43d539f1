"""Workers that share nothing but the ledger, the Prefect API and the bucket (issue 50).

The term (the manifest and its documents) is only in the tests' S3 bucket, and so are the
reports; the ledger is a fresh database of the tests' PostgreSQL. Every ``prefect worker
start`` (and, in the second test, ``deployments/serve.py``) runs in a mount namespace of its own
(tests/fixtures/fleet.py ``Isolation``): an empty tmpfs over ``/tmp`` hides the test's folders,
this checkout is read-only, the working directory and ``HOME`` are empty, and the environment
holds only what a platform would give it: the Prefect API's URL, the ledger's, the service's
address and key, and the bucket's credentials as the store's own chain reads them (``AWS_*``,
``AWS_ENDPOINT_URL`` at the S3 server), never a flow parameter.

1. Six shards of the installed package's shard deployment (``bulk-check-shard-installed``: a
   module path, no pull step) on three such workers, one killed mid-shard as in test_shards.py
   (the service slow until the kill, fast after it): the killed worker's shards run again
   elsewhere, every document is checked once at the emulator, and the bucket's reports list
   every document with its check.
2. The scheduled check served from its own namespace with ``DOCCHECK_MANIFEST`` and
   ``DOCCHECK_REPORTS_DIR`` at bucket URLs: a run of the deployment with its own parameters (what
   its schedule starts) reads the bucket, writes its reports there, and its artifacts and asset
   keys name the bucket, never a path of the process that ran it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.factories import flow_kwargs, random_essay
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.fleet import (
    Isolation,
    Parent,
    Worker,
    create_pool,
    deploy_shard,
    kill_one_mid_shard,
    lost_shards_rerun,
    namespace_refusal,
    shard_runs,
    start_worker,
    stop_workers,
    tolerate_a_killed_worker,
    worker_logs,
)
from tests.fixtures.prefect_server import eventually, server_events
from tests.fixtures.s3 import S3Bucket
from tests.fixtures.serve import start_serve, stop_serve, wait_for_deployment

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.prefect_server, pytest.mark.slow]

_REFUSED = namespace_refusal()
if _REFUSED:
    pytestmark.append(pytest.mark.skip(reason=_REFUSED))

DOCS = 180
SHARDS = 6
# The service's answer time until the kill: a shard of 30 (batches of 10, 4 at a time) takes 13 s or more.
SLOW_MS = 1500
SHARD_DEPLOYMENT = "bulk-check-shard/bulk-check-shard-installed"


def _term(bucket: S3Bucket, count: int, prefix: str = "course") -> str:
    """``count`` text documents and their manifest under ``s3://<bucket>/<prefix>/``; the manifest's URL."""
    files = {f"{bucket.name}/{prefix}/docs/s{i:04}.txt": random_essay(i).encode() for i in range(count)}
    rows = "".join(f"s{i:04},docs/s{i:04}.txt,ai\n" for i in range(count))
    files[f"{bucket.name}/{prefix}/manifest.csv"] = f"document_id,path,products\n{rows}".encode()
    bucket.fs.pipe(files)
    return f"{bucket.url}/{prefix}/manifest.csv"


def _submissions(bucket: S3Bucket, report_dir: str) -> Any:
    """The run's submissions.parquet, read from the bucket (the setup's own client)."""
    bucket.fs.invalidate_cache()
    with bucket.fs.open(f"{report_dir.removeprefix('s3://')}/submissions.parquet", "rb") as stream:
        return pq.read_table(stream).to_pandas()


def _sees(pid: int, path: Path) -> bool:
    """Whether ``path`` exists as process ``pid`` sees the file system (its mount namespace)."""
    return os.path.exists(f"/proc/{pid}/root{path}")


def _assert_isolated(worker: Worker, hidden: Path) -> None:
    """The worker is in a mount namespace of its own, where ``hidden`` is absent, its working
    directory empty and this checkout read-only (``/proc/<pid>/root`` is its view)."""
    pid = worker.process.pid
    # the namespace is arranged before the worker is exec'd, its last step the `cd`
    eventually(lambda: os.readlink(f"/proc/{pid}/cwd"), lambda cwd: cwd == "/tmp/work")
    assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
    assert hidden.exists() and not _sees(pid, hidden)
    assert os.readlink(f"/proc/{pid}/cwd") == "/tmp/work"
    mounts = Path(f"/proc/{pid}/mounts").read_text().splitlines()
    root = str(Path(__file__).resolve().parents[2])
    assert any(m.split()[1] == root and "ro" in m.split()[3].split(",") for m in mounts), mounts
    assert any(m.split()[1] == "/tmp" and m.split()[2] == "tmpfs" for m in mounts), mounts


@pytest.fixture
def fleet(
    prefect_server: Any, isolated_emulator: EmulatorHandle, s3_bucket: S3Bucket, postgres_database: str, tmp_path: Path
) -> Iterator[tuple[str, str, list[Worker]]]:
    """Three workers, each in its own namespace, and the installed package's shard deployment."""
    pool = f"bare-{uuid.uuid4().hex[:6]}"
    key = isolated_emulator.new_account(balance_cents=10**9)
    create_pool(prefect_server.api_url, pool)
    # What a platform gives a worker: addresses, the ledger's URL (no password: trust on loopback),
    # the service's key as the worker's own secret, the bucket's credentials for the store's chain.
    env = {"DOCCHECK_API_KEY": key, "DOCCHECK_BASE_URL": isolated_emulator.base_url,
           "DOCCHECK_DATABASE_URL": postgres_database, **s3_bucket.env}  # fmt: skip
    isolation = Isolation.of_this_machine(tmp_path)
    workers = [  # started before the deployment: they start up while `prefect deploy` runs
        start_worker(
            prefect_server.api_url,
            pool,
            f"{pool}-w{i}",
            tmp_path,
            env,
            limit=2,
            heartbeat_seconds=1,
            isolation=isolation,
        )  # fmt: skip
        for i in range(3)
    ]
    try:
        deploy_shard(prefect_server.api_url, pool, "bulk-check-shard-installed")
        yield pool, key, workers
    finally:
        stop_workers(workers)


@pytest.mark.timeout(600)  # ~1-2 min on an idle machine, 2-4 on a loaded one
def test_shards_on_workers_that_share_nothing_one_killed_exactly_one_check_each(
    fleet: tuple[str, str, list[Worker]],
    isolated_emulator: EmulatorHandle,
    s3_bucket: S3Bucket,
    postgres_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect.client.orchestration import get_client

    pool, key, workers = fleet
    emulator = isolated_emulator
    emulator.set_faults(latency_ms=SLOW_MS)  # until the kill: every shard mid-work, requests in flight
    manifest = _term(s3_bucket, DOCS)
    # The parent (this process) has the same settings as the workers; the ledger is no parameter.
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    monkeypatch.setenv("DOCCHECK_DATABASE_URL", postgres_database)
    monkeypatch.setenv("DOCCHECK_SHARD_DEPLOYMENT", SHARD_DEPLOYMENT)
    tolerate_a_killed_worker(monkeypatch, len(workers))
    for worker in workers:
        _assert_isolated(worker, tmp_path)
    parent = Parent(flow_kwargs(
        manifest=manifest, products=["ai"], out_dir=f"{s3_bucket.url}/reports", campaign=f"bare-{pool}",
        base_url=emulator.base_url, shards=SHARDS, batch_size=10, concurrency=4, wait=True, wait_timeout=180,
        poll_interval=1,
    )).start()  # fmt: skip

    kill = kill_one_mid_shard(pool, workers, lambda: emulator.account_state(key)["checks"], low=DOCS // 10,
                              high=int(DOCS * 0.7), going=parent.going)  # fmt: skip
    emulator.set_faults(latency_ms=0)  # the rest, the reruns and the polls at full speed
    assert kill.victim is not None, f"no shard was seen running mid-way: {kill.seen[::10]}\n{worker_logs(workers)}"
    summary = parent.summary(pool, workers, timeout=360)

    # Exactly one check per document at the service, whatever the killed shard had sent.
    state = emulator.account_state(key)
    assert state["checks"] == DOCS, (state, kill.at_checks)
    assert summary.status == "finished" and summary.documents == DOCS and summary.pending == 0
    # The reports are in the bucket, every document with its own check.
    assert summary.report_dir.startswith(f"{s3_bucket.url}/reports/"), summary.report_dir
    submissions = _submissions(s3_bucket, summary.report_dir)
    assert sorted(submissions["document_id"]) == [f"s{i:04}" for i in range(DOCS)]
    assert submissions["check_id"].notna().all() and submissions["check_id"].nunique() == DOCS
    assert int(submissions["charged_cents"].sum()) == state["charged_cents"]

    lost_shards_rerun(pool, kill.victim, SHARDS)
    runs = shard_runs(pool)
    assert all(r.parameters["manifest"] == manifest for r in runs)
    with get_client(sync_client=True) as client:  # every shard ran from the installed package
        deployments = {client.read_deployment(d).entrypoint for d in {r.deployment_id for r in runs}}
    assert deployments == {"prefect_doccheck.flows.shard.bulk_check_shard"}
    for run in runs:  # names and URLs: no key, no ledger URL, no storage credential
        assert key not in repr(run.parameters) and s3_bucket.secret_access_key not in repr(run.parameters)
        assert run.parameters.get("database_url") is None
    for worker in workers:  # nothing of the bucket's secret in what a worker printed
        assert s3_bucket.secret_access_key not in worker.log()


@pytest.mark.timeout(300)
def test_the_scheduled_check_served_from_its_own_namespace_reads_and_writes_the_bucket(
    prefect_server: Any,
    emulator: EmulatorHandle,
    s3_bucket: S3Bucket,
    postgres_database: str,
    tmp_path: Path,
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.deployments import run_deployment

    key = emulator.new_account()
    suffix = f"-bare-{uuid.uuid4().hex[:6]}"
    campaign = f"bare-{uuid.uuid4().hex[:6]}"
    manifest = _term(s3_bucket, 4, prefix="weekly")
    reports = f"{s3_bucket.url}/reports"
    env = {"DOCCHECK_API_KEY": key, "DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_DATABASE_URL": postgres_database,
           "DOCCHECK_DEPLOYMENT_SUFFIX": suffix, "DOCCHECK_MANIFEST": manifest, "DOCCHECK_REPORTS_DIR": reports,
           "DOCCHECK_CAMPAIGN": campaign, "DOCCHECK_PRODUCTS": "ai", **s3_bucket.env}  # fmt: skip
    process, log_path = start_serve(prefect_server.api_url, env, Isolation.of_this_machine(tmp_path))
    try:
        deployment = wait_for_deployment(f"bulk-check/weekly-course-check{suffix}", process, log_path, timeout=120)
        # What its schedule would start: the deployment's own parameters, the bucket's URLs as written.
        assert deployment.parameters["source"]["manifest"] == manifest
        assert deployment.parameters["output"]["out_dir"] == reports
        flow_run = run_deployment(
            deployment.id, parameters={"waiting": {"grace_seconds": 0, "poll_interval": 0.2, "timeout": 60}},
            timeout=180, poll_interval=1, as_subflow=False,
        )  # fmt: skip
        log = log_path.read_text(errors="replace")
    finally:
        stop_serve(process)
    assert flow_run.state is not None and flow_run.state.is_completed(), (flow_run.state, log[-4000:])
    s3_bucket.fs.invalidate_cache()
    latest = f"{s3_bucket.name}/reports/latest"
    with s3_bucket.fs.open(f"{latest}/submissions.parquet", "rb") as stream:
        assert sorted(pq.read_table(stream).column("document_id").to_pylist()) == [f"s{i:04}" for i in range(4)]
    assert s3_bucket.fs.exists(f"{latest}/report.html")

    # The UI points where the data is: the bucket's URLs, never a path of the process that ran it.
    with get_client(sync_client=True) as client:
        artifacts = eventually(
            lambda: client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run.id]))
            ),
            lambda found: {f"bulk-check-{campaign}", f"bulk-check-{campaign}-report"} <= {a.key for a in found},
        )
    by_key = {a.key: str(a.data) for a in artifacts}
    assert f"({reports}/{campaign}" in by_key[f"bulk-check-{campaign}-report"]
    assert by_key[f"bulk-check-{campaign}-report"].endswith("/report.html)")
    for data in by_key.values():
        assert "/tmp/" not in data and "file://" not in data and s3_bucket.secret_access_key not in data
    assets = eventually(lambda: server_events(prefect_server.api_url, [f"{reports}/"]), lambda found: len(found) > 0)
    assert {e["resource"]["prefect.resource.id"] for e in assets} >= {f"{reports}/submissions"}
    assert s3_bucket.secret_access_key not in log
