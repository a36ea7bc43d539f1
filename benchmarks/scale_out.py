"""Scale-out throughput (issue 12): one run in shards on 1, 2 and 4 process workers.

Run:  .venv/bin/python benchmarks/scale_out.py [--workers 1,2,4] [--n 1200] [--shards 4]
          [--latency-ms 100] [--rate 100] [--concurrency 4] [--postgres URL] [--bucket | --files]

Everything real, on this machine: a ``prefect server``, a PostgreSQL ledger (a throwaway
cluster, or ``--postgres URL`` of a server where a fresh database is created), one
``doccheck emulator`` with ``--latency-ms`` per request, a process work pool with the
``bulk-check-shard`` deployment (``prefect deploy`` of ``deployments/prefect.yaml``). Per
level, W ``prefect worker start --limit 1`` processes (one shard at a time each: a worker
stands for a machine) serve ``bulk_check(..., shards=S, wait=False)`` over N fresh
documents (a new campaign each level, so every document is a new check), with the fleet
rate limit ``--rate`` requests/s (``DOCCHECK_RATE_LIMIT_PER_SECOND``, a Prefect global
concurrency limit).

Measured at the emulator (its ``/_emulator/state`` check count, sampled every 0.25 s):
checks/s over the submitting window, the same over the seconds in which checks were made
("while busy": without the gaps while a worker starts its next shard), and the highest
count in any 1 s and the highest rate over any 5 s window. A token bucket of one second's
capacity lets a 1 s window see up to twice the rate; the 5 s figure is the one that shows
whether the rate was held (at most the rate plus a fifth of the capacity).
Also the parent's wall time (flow starts included) and the speed-up against 1 worker.

``--bucket``: the term and its outputs only in an S3 server (moto in server mode, as the tests run
it): the manifest and one ``.txt`` object a document under ``s3://scale-out/term/``, the reports
under ``s3://scale-out/reports``; the shard deployment is the installed package's
(``bulk-check-shard-installed``) and every worker runs in a mount namespace of its own
(tests/fixtures/fleet.py ``Isolation``: an empty ``/tmp``, working directory and ``HOME``, the
checkout read-only), reaching the bucket by ``AWS_*`` with ``AWS_ENDPOINT_URL``. ``--files``
writes the same documents as files beside a local manifest, the local twin of ``--bucket``; with
neither, the texts are in the manifest (the figures before issue 50). The load average is printed
before each level: the machine is shared, so read the ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pg_cluster import fresh_database, throwaway_postgres  # noqa: E402
from pipeline_throughput import API_KEY, emulator_checks, start_emulator, write_manifest  # noqa: E402

from doccheck.commands import free_port, prefect_command, start_service  # noqa: E402
from doccheck.pipeline import RunOptions  # noqa: E402
from tests.fixtures.fleet import Isolation, create_pool, deploy_shard, namespace_refusal, start_worker, stop_worker  # noqa: E402,E501
from tests.fixtures.processes import stop_process  # noqa: E402
from tests.fixtures.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, s3_environment, start_s3_server  # noqa: E402

BUCKET = "scale-out"


class Sampler:
    """Samples the emulator's check count every ``interval`` seconds in a thread."""

    def __init__(self, root: str, interval: float = 0.25) -> None:
        self.root, self.interval = root, interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), emulator_checks(self.root)))
            self._stop.wait(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append((time.monotonic(), emulator_checks(self.root)))

    def figures(self, base: int) -> dict[str, float]:
        points = [(t, c - base) for t, c in self.samples]
        moving = [(t, c) for t, c in points if c > 0]
        if len(moving) < 2:
            return {"checks": float(points[-1][1]), "checks_per_s": 0.0, "busy_per_s": 0.0, "peak_1s": 0.0,
                    "peak_5s": 0.0}  # fmt: skip
        first = next(i for i, (_, c) in enumerate(points) if c > 0)
        t0 = points[max(0, first - 1)][0]
        last_count = points[-1][1]
        t1 = next(t for t, c in points if c == last_count)

        def peak_over(window: float) -> float:
            best = 0
            for i, (t, c) in enumerate(points):
                later = [c2 for t2, c2 in points[i:] if t2 - t <= window]
                best = max(best, later[-1] - c)
            return best / window

        peak = peak_over(1.0)
        # seconds (whole-second bins from the start) in which any check was created: the
        # submitting time, without the gaps while a worker starts its next shard's process
        busy = {int((t - t0) // 1) for (t, c), (_, prev) in zip(points[1:], points, strict=False) if c > prev}
        return {
            "checks": float(last_count),
            "checks_per_s": last_count / max(1e-6, t1 - t0),
            "busy_per_s": last_count / max(1, len(busy)),
            "peak_1s": float(peak),
            "peak_5s": peak_over(5.0),
        }


def _documents(manifest: Path) -> dict[str, bytes]:
    """The texts of ``write_manifest``'s manifest, one ``docs/<id>.txt`` file each."""
    with manifest.open(newline="") as fh:
        return {f"docs/{row['document_id']}.txt": row["text"].encode() for row in csv.DictReader(fh)}


def _files_manifest(documents: dict[str, bytes]) -> bytes:
    rows = "".join(f"{name.removeprefix('docs/').removesuffix('.txt')},{name}\n" for name in documents)
    return f"document_id,path\n{rows}".encode()


def _bucket_term(work: Path, n: int, stops: list[Any]) -> tuple[str, str, dict[str, str]]:
    """An S3 server with the term in a bucket: (the manifest's URL, the reports' URL, the workers'
    and this process's AWS_* variables)."""
    import s3fs

    server = start_s3_server()
    stops.append(lambda: (stop_process(server.process), server.log_path.unlink(missing_ok=True)))
    fs = s3fs.S3FileSystem(key=ACCESS_KEY_ID, secret=SECRET_ACCESS_KEY, endpoint_url=server.url,
                           config_kwargs={"region_name": REGION}, skip_instance_cache=True)  # fmt: skip
    fs.mkdir(BUCKET)
    documents = _documents(write_manifest(work / "texts", n))
    fs.pipe({f"{BUCKET}/term/{name}": data for name, data in documents.items()})
    fs.pipe({f"{BUCKET}/term/manifest.csv": _files_manifest(documents)})
    env = s3_environment(server.url, SECRET_ACCESS_KEY)
    os.environ.update(env)  # the parent reads the manifest and writes the reports there too
    return f"s3://{BUCKET}/term/manifest.csv", f"s3://{BUCKET}/reports", env


def _local_term(work: Path, n: int, files: bool) -> tuple[str, str]:
    """The term on this disk: the texts in the manifest, or (``files``) one file a document."""
    manifest = write_manifest(work / "manifest", n)
    if files:
        documents = _documents(manifest)
        for name, data in documents.items():
            (work / "manifest" / name).parent.mkdir(exist_ok=True)
            (work / "manifest" / name).write_bytes(data)
        manifest.write_bytes(_files_manifest(documents))
    return str(manifest), str(work / "reports")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="worker counts; the first is the baseline")
    parser.add_argument("--n", type=int, default=1200, help="documents per level")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--rate", type=float, default=100, help="fleet rate limit, requests/s (0: none)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight per shard")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (default: a throwaway cluster)")
    parser.add_argument("--bucket", action="store_true", help="the term in an S3 server, workers in namespaces")
    parser.add_argument("--files", action="store_true", help="one local file a document (the local twin of --bucket)")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.workers.split(",") if x.strip()]
    refused = namespace_refusal() if args.bucket else None
    if refused:
        parser.error(refused)

    work = Path(tempfile.mkdtemp(prefix="doccheck-scale-out-"))
    stops: list[Any] = []
    try:
        home = work / "prefect"
        home.mkdir()
        port = free_port()
        api_url = f"http://127.0.0.1:{port}/api"
        server = start_service(
            "prefect server", prefect_command("server", "start", "--host", "127.0.0.1", "--port", str(port), "--no-ui"),
            health_url=api_url + "/health", url=api_url, log_path=home / "server.log",
            env={"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_API_URL": ""},
            timeout=120,
        )  # fmt: skip
        stops.append(lambda: server.stop(timeout=20))
        os.environ.update(PREFECT_API_URL=api_url, PREFECT_HOME=str(home), PREFECT_LOGGING_LEVEL="WARNING")
        if args.postgres:
            pg = args.postgres
        else:
            cluster = throwaway_postgres("-c max_connections=300")  # a worker's flow runs each hold a pool
            pg = cluster.__enter__()
            stops.append(lambda: cluster.__exit__(None, None, None))
        emulator, root = start_emulator(work, args.latency_ms)
        stops.append(lambda: emulator.stop())
        base_url = f"{root}/api/v1"
        pool = "scale-out-bench"
        create_pool(api_url, pool)
        isolation, worker_env = None, {}
        if args.bucket:
            manifest, out_dir, worker_env = _bucket_term(work, args.n, stops)
            isolation = Isolation.of_this_machine(work)
            deploy_shard(api_url, pool, "bulk-check-shard-installed")
            os.environ["DOCCHECK_SHARD_DEPLOYMENT"] = "bulk-check-shard/bulk-check-shard-installed"
        else:
            manifest, out_dir = _local_term(work, args.n, args.files)
            deploy_shard(api_url, pool)
        os.environ["DOCCHECK_API_KEY"] = API_KEY
        if args.rate > 0:
            os.environ["DOCCHECK_RATE_LIMIT_PER_SECOND"] = str(args.rate)
            os.environ["DOCCHECK_RATE_LIMIT_NAME"] = "scale-out-bench"

        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
        from prefect_doccheck.flows.bulk_check import bulk_check

        database = fresh_database(pg)
        where = ("bucket (S3 server), workers in their own namespaces" if args.bucket
                 else "local disk, one file a document" if args.files else "local disk, texts in the manifest")  # fmt: skip
        print(f"scale out: {args.n} documents in {args.shards} shards, {args.concurrency} in flight per shard, "
              f"emulator latency {args.latency_ms} ms, fleet rate limit {args.rate or 'none'}/s; term: {where}")  # fmt: skip
        print(f"{'workers':>7} {'wall s':>7} {'docs/s':>7} {'checks/s at emulator':>21} {'while busy':>11} "
              f"{'peak 1 s':>9} {'peak 5 s /s':>12} {'speed-up':>9}  load 1/5/15 min before")  # fmt: skip
        baseline: float | None = None
        for count in levels:
            env = {"DOCCHECK_API_KEY": API_KEY, "DOCCHECK_BASE_URL": base_url, "PREFECT_LOGGING_LEVEL": "WARNING",
                   **worker_env}  # fmt: skip
            load = _load()
            workers = [start_worker(api_url, pool, f"bench-{count}-{i}", work, env, limit=1, heartbeat_seconds=5,
                                    isolation=isolation)
                       for i in range(count)]  # fmt: skip
            try:
                time.sleep(3)  # the workers register and start polling
                before = emulator_checks(root)
                started = time.monotonic()
                with Sampler(root) as sampler:
                    summary = asyncio.run(
                        bulk_check(
                            **RunOptions.from_flat(
                                manifest=manifest,
                                products=["ai"],
                                out_dir=out_dir,
                                campaign=f"scale-{count}-{uuid.uuid4().hex[:4]}",
                                database_url=database,
                                base_url=base_url,
                                shards=args.shards,
                                concurrency=args.concurrency,
                                batch_size=100,
                                wait=False,
                            ).flow_parameters()
                        )  # fmt: skip
                    )
                wall = time.monotonic() - started
            finally:
                for worker in workers:
                    stop_worker(worker)
            fig = sampler.figures(before)
            assert fig["checks"] == args.n, (fig, summary.status)
            baseline = baseline or fig["checks_per_s"]
            print(f"{count:>7} {wall:>7.1f} {args.n / wall:>7.1f} {fig['checks_per_s']:>21.1f} "
                  f"{fig['busy_per_s']:>11.1f} {fig['peak_1s']:>9.0f} {fig['peak_5s']:>12.1f} "
                  f"{fig['checks_per_s'] / baseline:>8.2f}x  {load}")  # fmt: skip
        return 0
    finally:
        for stop in reversed(stops):
            try:
                stop()
            except Exception:  # noqa: BLE001 - best effort at exit
                pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
