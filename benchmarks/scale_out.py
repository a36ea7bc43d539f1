"""Scale-out throughput (issue 12): one run in shards on 1, 2 and 4 process workers.

Run:  .venv/bin/python benchmarks/scale_out.py [--workers 1,2,4] [--n 1200] [--shards 4]
          [--latency-ms 100] [--rate 100] [--concurrency 4] [--postgres URL]

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
"""

from __future__ import annotations

import argparse
import asyncio
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
from tests.fixtures.fleet import create_pool, deploy_shard, start_worker, stop_worker  # noqa: E402


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="worker counts; the first is the baseline")
    parser.add_argument("--n", type=int, default=1200, help="documents per level")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--rate", type=float, default=100, help="fleet rate limit, requests/s (0: none)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight per shard")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (default: a throwaway cluster)")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.workers.split(",") if x.strip()]

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
        deploy_shard(api_url, pool)
        os.environ["DOCCHECK_API_KEY"] = API_KEY
        if args.rate > 0:
            os.environ["DOCCHECK_RATE_LIMIT_PER_SECOND"] = str(args.rate)
            os.environ["DOCCHECK_RATE_LIMIT_NAME"] = "scale-out-bench"

        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
        from prefect_doccheck.flows.bulk_check import bulk_check

        manifest = write_manifest(work / "manifest", args.n)
        database = fresh_database(pg)
        print(f"scale out: {args.n} documents in {args.shards} shards, {args.concurrency} in flight per shard, "
              f"emulator latency {args.latency_ms} ms, fleet rate limit {args.rate or 'none'}/s")  # fmt: skip
        print(f"{'workers':>7} {'wall s':>7} {'docs/s':>7} {'checks/s at emulator':>21} {'while busy':>11} "
              f"{'peak 1 s':>9} {'peak 5 s /s':>12} {'speed-up':>9}")  # fmt: skip
        baseline: float | None = None
        for count in levels:
            env = {"DOCCHECK_API_KEY": API_KEY, "DOCCHECK_BASE_URL": base_url, "PREFECT_LOGGING_LEVEL": "WARNING"}
            workers = [start_worker(api_url, pool, f"bench-{count}-{i}", work, env, limit=1, heartbeat_seconds=5)
                       for i in range(count)]  # fmt: skip
            try:
                time.sleep(3)  # the workers register and start polling
                before = emulator_checks(root)
                started = time.monotonic()
                with Sampler(root) as sampler:
                    summary = asyncio.run(
                        bulk_check(
                            **RunOptions.from_flat(
                                manifest=str(manifest),
                                products=["ai"],
                                out_dir=str(work / "reports"),
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
                  f"{fig['checks_per_s'] / baseline:>8.2f}x")  # fmt: skip
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
