"""Documents per second through ``doccheck.pipeline.submit_batch`` vs its concurrency.

Run:  .venv/bin/python benchmarks/pipeline_throughput.py [--n 500] [--concurrency 1,8,16]
                                                        [--latency-ms 0] [--products ai]

Against a real ``doccheck emulator`` subprocess (``--processing-seconds 0.2 --offline``,
optional ``--latency-ms`` per request to stand in for a remote service's round trip) and a
SQLite ledger in a temporary folder. N short generated text documents (one CSV manifest,
planned by ``doccheck.pipeline.load_plan``) are submitted once per concurrency level, each
level in its own campaign and its own fresh ledger, so every level sends N checks. The
first level is the baseline (default 1); the figures are docs/s and the ratio to it.

Then a rerun: the last level's documents again, same ledger and campaign, new run. Every
document already has a check in the ledger, so it must send zero requests; the HTTP
requests are counted by a wrapping transport and the emulator's check count is compared.
Submission only: waiting for results is not measured.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from doccheck.client import AsyncDocCheckClient, ConnectionLanes  # noqa: E402
from doccheck.commands import Service, doccheck_command, free_port, start_service  # noqa: E402
from doccheck.ledger import Ledger  # noqa: E402
from doccheck.pipeline import (  # noqa: E402
    Plan,
    SubmitOptions,  # noqa: E402
    load_plan,
    submit_batch,  # noqa: E402
)

API_KEY = "sk_test_bench_throughput"
WORDS = [
    "river",
    "archive",
    "lantern",
    "meadow",
    "quarry",
    "harbour",
    "signal",
    "copper",
    "orchard",
    "thunder",
    "velvet",
    "canyon",
    "ledger",
    "pebble",
    "migrate",
    "compass",
    "glacier",
    "ember",
    "lattice",
    "summit",
    "willow",
    "beacon",
    "cipher",
    "drizzle",
]


class CountingTransport(httpx.AsyncBaseTransport):
    """Counts every request the client sends (the rerun must send none), around the
    client's own default transport (``ConnectionLanes``, 64 lanes)."""

    def __init__(self, lanes: int = 64) -> None:
        self.inner = ConnectionLanes(lanes)
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def write_manifest(folder: Path, n: int, seed: int = 7) -> Path:
    """N distinct short texts (40-80 words) in a CSV manifest."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "manifest.csv"
    with manifest.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["document_id", "text"])
        for i in range(n):
            words = [rng.choice(WORDS) for _ in range(rng.randint(40, 80))]
            writer.writerow([f"doc-{i:05d}", f"Essay {i}. " + " ".join(words) + "."])
    return manifest


def start_emulator(work: Path, latency_ms: int) -> tuple[Service, str]:
    port, storage_port = free_port(), free_port()
    while storage_port == port:
        storage_port = free_port()
    args = doccheck_command(
        "emulator", "--host", "127.0.0.1", "--port", str(port), "--storage-port", str(storage_port),
        "--api-key", API_KEY, "--balance-cents", "100000000", "--processing-seconds", "0.2",
        "--latency-ms", str(latency_ms), "--offline", "--seed", "1",
    )  # fmt: skip
    root = f"http://127.0.0.1:{port}"
    service = start_service(
        "emulator", args, health_url=f"{root}/_emulator/health", url=root,
        log_path=work / "emulator.log", env={"PYTHONUNBUFFERED": "1"}, timeout=60,
    )  # fmt: skip
    return service, root


def emulator_checks(root: str) -> int:
    state = httpx.get(f"{root}/_emulator/state", timeout=30).json()
    return int(state["accounts"][API_KEY]["checks"])


async def submit(base_url: str, ledger: Ledger, plan: Plan, concurrency: int) -> tuple[float, Any, int]:
    """One run over the whole plan: (seconds, BatchResult, HTTP requests sent)."""
    run_id = ledger.start_run(campaign=plan.campaign, manifest=str(plan.manifest), products=["ai"])
    transport = CountingTransport()
    async with AsyncDocCheckClient(base_url, API_KEY, transport=transport, max_connections=64) as client:
        started = time.perf_counter()
        result = await submit_batch(client, ledger, run_id, plan.documents, SubmitOptions(concurrency=concurrency))
        elapsed = time.perf_counter() - started
    ledger.finish_run(run_id)
    return elapsed, result, transport.requests


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="documents per level (default 500)")
    parser.add_argument("--concurrency", default="1,8,16", help="levels; the first is the baseline")
    parser.add_argument("--latency-ms", type=int, default=0, help="emulator latency per request (default 0)")
    parser.add_argument("--products", default="ai")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]

    work = Path(tempfile.mkdtemp(prefix="doccheck-bench-throughput-"))
    manifest = write_manifest(work / "corpus", args.n)
    emulator, root = start_emulator(work, args.latency_ms)
    base_url = f"{root}/api/v1"
    rows: list[dict[str, Any]] = []
    try:
        print(f"pipeline throughput: {args.n} text documents, products={args.products}, "
              f"emulator latency {args.latency_ms} ms, SQLite ledgers in a temp dir")  # fmt: skip
        # warm-up (connections, imports, the emulator's first requests), not measured
        warm = load_plan(write_manifest(work / "warm", 20, seed=1), campaign="bench-warmup", products=args.products)
        asyncio.run(submit(base_url, Ledger(f"sqlite:///{work / 'ledger-warmup.db'}"), warm, 4))
        last: tuple[Ledger, Plan] | None = None
        for i, level in enumerate(levels):
            plan = load_plan(manifest, campaign=f"bench-c{level}-{i}", products=args.products)
            assert len(plan.documents) == args.n, plan.rejections[:3]
            ledger = Ledger(f"sqlite:///{work / f'ledger-c{level}-{i}.db'}")
            before = emulator_checks(root)
            elapsed, result, requests = asyncio.run(submit(base_url, ledger, plan, level))
            made = emulator_checks(root) - before
            if result.submitted != args.n or made != args.n:
                raise SystemExit(f"concurrency {level}: expected {args.n} new checks, got {result} / {made}")
            rows.append({"concurrency": level, "seconds": elapsed, "docs_per_s": args.n / elapsed,
                         "requests": requests, "checks": made})  # fmt: skip
            last = (ledger, plan)

        assert last is not None
        ledger, plan = last
        before = emulator_checks(root)
        rerun_s, rerun, rerun_requests = asyncio.run(submit(base_url, ledger, plan, levels[-1]))
        rerun_checks = emulator_checks(root) - before
    finally:
        emulator.stop()
    shutil.rmtree(work, ignore_errors=True)

    base = rows[0]["docs_per_s"]
    print()
    print(f"| concurrency | seconds | docs/s | vs concurrency {levels[0]} | requests | new checks |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['concurrency']} | {r['seconds']:.2f} | {r['docs_per_s']:.1f} | "
              f"{r['docs_per_s'] / base:.2f}x | {r['requests']} | {r['checks']} |")  # fmt: skip
    print()
    print(f"rerun (all {args.n} in the ledger, concurrency {levels[-1]}): {rerun_s:.3f} s, "
          f"{rerun_requests} HTTP requests, {rerun_checks} new checks, "
          f"already_done={rerun.already_done} submitted={rerun.submitted}")  # fmt: skip
    ok = rerun_requests == 0 and rerun_checks == 0 and rerun.already_done == args.n
    print("rerun sends zero requests: " + ("OK" if ok else "FAILED"))
    figures = {"n": args.n, "latency_ms": args.latency_ms, "levels": rows,
               "rerun": {"seconds": rerun_s, "requests": rerun_requests, "checks": rerun_checks}}  # fmt: skip
    if args.json:
        print(json.dumps(figures))
    if not ok:
        raise SystemExit(1)
    return figures


if __name__ == "__main__":
    main()
