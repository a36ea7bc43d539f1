"""Prefect orchestration overhead: one task run per item (``.map``) vs items in batches of 100.

Run:  .venv/bin/python benchmarks/prefect_batching.py [--n 1000] [--batch-size 100] [--parallel 2]

Why: the flows submit documents in batches (``prefect_doccheck.flows.bulk_check``: ``batch_size`` 100, a
few batch tasks at a time) instead of one task run per document. Every task run costs
API calls and state-change events, and the server's in-memory event pipeline drops
messages when thousands arrive at once. This measures both shapes on a REAL local Prefect
server (``prefect server start --no-ui``, temporary PREFECT_HOME, analytics off, the
scheduler and late-runs services off as in ``tests/fixtures/prefect_server.py``), with
trivial work per item (one SHA-256), so the figures are orchestration overhead:

- baseline "mapped": a sync flow, ``hash_item.map(range(N))`` (N task runs, Prefect's
  default thread-pool task runner), then every future's result;
- "batched" (the project's shape): an async flow, items cut into lists of ``--batch-size``
  (a run's batch refs have the same size), one async task per batch, ``--parallel`` at a time with
  ``asyncio.gather`` (N / 100 task runs).

Each flow runs in its own fresh interpreter with ``PREFECT_API_URL`` pointing at the
server (Prefect reads its settings when imported). Reported: wall time of the flow call,
the time until Prefect's event/log workers are drained (everything handed to the server),
and how many task runs the server recorded for that flow run (read back with the Prefect
client, polled until the count is stable), vs expected; plus the server's log lines that
say it dropped messages. The batched flow runs first (after a small warm-up) so that the
baseline's event backlog cannot slow it down.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DROP_PATTERN = re.compile(r"queue is full|Event queue full|dropping", re.IGNORECASE)


# --- the child: runs one flow against PREFECT_API_URL and prints one JSON line ---------


def _digest(i: int) -> str:
    return hashlib.sha256(f"item-{i}".encode()).hexdigest()


def child(mode: str, n: int, batch_size: int, parallel: int, settle_timeout: float) -> dict[str, Any]:
    from prefect import flow, task
    from prefect.cache_policies import NONE
    from prefect.runtime import flow_run

    from prefect_doccheck.flows import drain_prefect

    @task(name="hash item", cache_policy=NONE)
    def hash_item(i: int) -> str:
        return _digest(i)

    @task(name="hash batch", cache_policy=NONE)
    async def hash_batch(items: list[int]) -> list[str]:
        return [_digest(i) for i in items]

    @flow(name="bench-mapped", log_prints=False)
    def mapped_flow(n: int) -> tuple[str, int]:
        futures = hash_item.map(list(range(n)))
        return str(flow_run.id), len([f.result() for f in futures])

    @flow(name="bench-batched", log_prints=False)
    async def batched_flow(n: int, batch_size: int, parallel: int) -> tuple[str, int]:
        groups = [list(range(i, min(i + batch_size, n))) for i in range(0, n, batch_size)]
        done = 0
        for start in range(0, len(groups), parallel):
            chunk = groups[start : start + parallel]
            results = await asyncio.gather(
                *(
                    hash_batch.with_options(task_run_name=f"hash batch {start + i + 1}/{len(groups)}")(g)
                    for i, g in enumerate(chunk)
                )
            )
            done += sum(len(r) for r in results)
        return str(flow_run.id), done

    started = time.perf_counter()
    if mode == "mapped":
        run_id, done = mapped_flow(n)
        expected = n
    else:
        run_id, done = asyncio.run(batched_flow(n, batch_size, parallel))
        expected = -(-n // batch_size)  # batches of batch_size, the last one shorter
    flow_s = time.perf_counter() - started
    drain_prefect(timeout=120)
    drained_s = time.perf_counter() - started
    assert done == n, (done, n)
    recorded, completed, settle_s = asyncio.run(_read_back(run_id, expected, settle_timeout))
    return {"mode": mode, "n": n, "flow_s": flow_s, "drained_s": drained_s, "expected_task_runs": expected,
            "recorded_task_runs": recorded, "completed_task_runs": completed, "settle_s": settle_s,
            "flow_run_id": run_id}  # fmt: skip


async def _count(client: Any, run_id: str) -> tuple[int, int]:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    flt = FlowRunFilter(id=FlowRunFilterId(any_=[run_id]))
    total = completed = offset = 0
    while True:
        page = await client.read_task_runs(flow_run_filter=flt, limit=200, offset=offset)
        total += len(page)
        completed += sum(1 for tr in page if tr.state is not None and tr.state.is_completed())
        if len(page) < 200:
            return total, completed
        offset += 200


async def _read_back(run_id: str, expected: int, timeout: float) -> tuple[int, int, float]:
    """Task runs the server recorded for ``run_id``: poll until all are there and completed,
    or the count has not moved for 10 s, or ``timeout``. Returns (recorded, completed, seconds)."""
    from prefect.client.orchestration import get_client

    started = time.perf_counter()
    last, last_change = (-1, -1), time.perf_counter()
    async with get_client() as client:
        while True:
            counts = await _count(client, run_id)
            now = time.perf_counter()
            if counts != last:
                last, last_change = counts, now
            if counts == (expected, expected) or now - last_change > 10 or now - started > timeout:
                return counts[0], counts[1], now - started
            await asyncio.sleep(1.0)


# --- the parent: starts the server, runs the children, prints the table -----------------


def run_child(mode: str, args: argparse.Namespace, env: dict[str, str], n: int | None = None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", mode, "--n", str(n or args.n), "--batch-size", str(args.batch_size),
           "--parallel", str(args.parallel), "--settle-timeout", str(args.settle_timeout)]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, timeout=args.child_timeout)
    wall = time.perf_counter() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{mode} child failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1])
    result["process_s"] = wall
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="items (default 1000)")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--parallel", type=int, default=2, help="batch tasks at a time (the flow's default 2)")
    parser.add_argument("--settle-timeout", type=float, default=90.0, help="max seconds to wait for the read-back")
    parser.add_argument("--child-timeout", type=float, default=600.0)
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    parser.add_argument("--child", choices=["mapped", "batched"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        print(json.dumps(child(args.child, args.n, args.batch_size, args.parallel, args.settle_timeout)))
        return {}

    from doccheck.commands import free_port, prefect_command, start_service

    home = Path(tempfile.mkdtemp(prefix="doccheck-bench-prefect-"))
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    server_env = {
        "PREFECT_HOME": str(home / "server"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_API_URL": "",
        "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_LATE_RUNS_ENABLED": "false",
    }
    log_path = home / "server.log"
    print(f"prefect batching: N={args.n} items, batches of {args.batch_size}, {args.parallel} batch tasks at a time")
    t0 = time.perf_counter()
    server = start_service(
        "prefect server",
        prefect_command("server", "start", "--host", "127.0.0.1", "--port", str(port), "--no-ui"),
        health_url=api_url + "/health", url=api_url, log_path=log_path, env=server_env, timeout=180,
    )  # fmt: skip
    print(f"local Prefect server up in {time.perf_counter() - t0:.1f} s ({api_url})")
    child_env = {
        **os.environ,
        "PREFECT_HOME": str(home / "client"),
        "PREFECT_API_URL": api_url,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    }
    results: dict[str, dict[str, Any]] = {}
    drops: dict[str, int] = {}
    sample: str | None = None
    try:
        run_child("batched", args, child_env, n=min(args.n, 200))  # warm-up: server caches, imports
        for mode in ("batched", "mapped"):
            before = _drop_lines(log_path)
            results[mode] = run_child(mode, args, child_env)
            drops[mode] = _drop_lines(log_path) - before
        sample = _first_drop_line(log_path)
    finally:
        server.stop(timeout=30)
    shutil.rmtree(home, ignore_errors=True)

    base, ours = results["mapped"], results["batched"]
    print()
    print(
        "| shape | task runs expected | recorded by the server | completed | flow wall (s) | until drained (s) | read-back settled after (s) | server drop lines |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, mode in (("one task per item (.map), baseline", "mapped"), (f"batches of {args.batch_size}", "batched")):
        r = results[mode]
        print(f"| {label} | {r['expected_task_runs']} | {r['recorded_task_runs']} | {r['completed_task_runs']} | "
              f"{r['flow_s']:.2f} | {r['drained_s']:.2f} | {r['settle_s']:.1f} | {drops[mode]} |")  # fmt: skip
    print()
    print(f"speed-up of batching: {base['flow_s'] / ours['flow_s']:.1f}x on flow wall time, "
          f"{base['drained_s'] / ours['drained_s']:.1f}x until drained")  # fmt: skip
    lost = base["expected_task_runs"] - base["recorded_task_runs"]
    print(f"baseline task runs missing on the server: {lost} of {base['expected_task_runs']}; "
          f"batched: {ours['expected_task_runs'] - ours['recorded_task_runs']} of {ours['expected_task_runs']}")  # fmt: skip
    if sample:
        print(f"first server drop line: {sample}")
    figures = {"n": args.n, "batch_size": args.batch_size, "results": results, "drop_lines": drops}
    if args.json:
        print(json.dumps(figures))
    return figures


def _first_drop_line(log_path: Path) -> str | None:
    try:
        for line in log_path.read_text(errors="replace").splitlines():
            if DROP_PATTERN.search(line):
                return line.strip()[:240]
    except OSError:
        pass
    return None


def _drop_lines(log_path: Path) -> int:
    try:
        return sum(1 for line in log_path.read_text(errors="replace").splitlines() if DROP_PATTERN.search(line))
    except OSError:
        return 0


if __name__ == "__main__":
    main()
