"""Marginal submission throughput (issue 10): ``submit_batch`` vs a raw asyncio httpx loop.

Run:  .venv/bin/python benchmarks/submit_marginal.py [--n 400] [--concurrency 16] [--latency-ms 20]
                                                     [--postgres URL | --start-postgres]

One ``doccheck emulator`` subprocess with ``--latency-ms`` per request. In the same run,
alternately (raw, pipeline, raw, pipeline: ``--rounds``):

* **raw**: N ``POST /checks`` with the same JSON bodies and Idempotency-Keys style, from a
  plain ``httpx.AsyncClient`` under an ``asyncio.Semaphore(concurrency)``: the network's
  and the emulator's own speed, no ledger;
* **pipeline**: ``doccheck.pipeline.submit_batch`` over the same N planned documents in a
  fresh campaign and a fresh SQLite ledger (``--postgres URL``: also a fresh database on
  that server; ``--start-postgres``: a throwaway local cluster, see ``pg_cluster.py``), at
  the same concurrency: claims, ``submitting``, the answer, the release.

The emulator sets TCP_NODELAY on its sockets (``doccheck.emulator._server.bind``); before it
did, every request also waited ~40 ms for a delayed ACK, which hid the pipeline's own costs.

Every round sends N new checks (fresh keys), so both sides do the same work at the
service. Figures: docs/s of each, and pipeline / raw (target ≥ 0.9 at concurrency 16,
20 ms). Plans are made before the clock starts; only submission is timed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pg_cluster import fresh_database, throwaway_postgres  # noqa: E402
from pipeline_throughput import API_KEY, CountingTransport, emulator_checks, start_emulator, write_manifest  # noqa: E402

from doccheck.client import AsyncDocCheckClient  # noqa: E402
from doccheck.ledger import Ledger  # noqa: E402
from doccheck.pipeline import (  # noqa: E402
    Plan,
    SubmitOptions,  # noqa: E402
    load_plan,
    submit_batch,  # noqa: E402
)


async def raw_loop(base_url: str, plan: Plan, concurrency: int) -> float:
    """Seconds for N POST /checks from a bare httpx client at ``concurrency``."""
    sem = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    salt = uuid.uuid4().hex
    async with httpx.AsyncClient(
        base_url=base_url, limits=limits, timeout=60, headers={"Authorization": f"Bearer {API_KEY}"}
    ) as client:

        async def one(doc: object) -> None:
            async with sem:
                body = {
                    "text": doc.text,
                    "products": list(doc.products),
                    "name": doc.name,  # type: ignore[attr-defined]
                    "metadata": dict(doc.metadata),
                }  # type: ignore[attr-defined]
                response = await client.post(
                    "/checks", json=body, headers={"Idempotency-Key": f"raw-{salt}-{doc.idempotency_key}"}
                )  # type: ignore[attr-defined]
                response.raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(one(d) for d in plan.documents))
        return time.perf_counter() - started


async def submit(
    base_url: str, ledger: Ledger, plan: Plan, concurrency: int, emulator_pid: int
) -> tuple[float, Any, tuple[float, float]]:
    """``submit_batch`` over the plan: (seconds, BatchResult, CPU seconds of this process
    and of the emulator), all three measured around ``submit_batch`` only (the run's
    start and its closing summary are outside, as for the raw loop)."""
    run_id = ledger.start_run(campaign=plan.campaign, manifest=str(plan.manifest), products=["ai"])
    async with AsyncDocCheckClient(base_url, API_KEY, transport=CountingTransport(), max_connections=64) as client:
        c0, e0 = proc_cpu(os.getpid()), proc_cpu(emulator_pid)
        started = time.perf_counter()
        result = await submit_batch(client, ledger, run_id, plan.documents, SubmitOptions(concurrency=concurrency))
        elapsed = time.perf_counter() - started
        cpu = (proc_cpu(os.getpid()) - c0, proc_cpu(emulator_pid) - e0)
    ledger.finish_run(run_id)
    return elapsed, result, cpu


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--postgres", default=None, help="also measure a PostgreSQL ledger (server URL)")
    parser.add_argument("--start-postgres", action="store_true", help="also measure PostgreSQL on a throwaway cluster")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(throwaway_postgres()) if args.start_postgres else args.postgres
        run(args, server)


def run(args: argparse.Namespace, postgres: str | None) -> None:
    """The alternating rounds; prints the figures."""
    work = Path(tempfile.mkdtemp(prefix="doccheck-bench-marginal-"))
    manifest = write_manifest(work / "corpus", args.n)
    emulator, root = start_emulator(work, args.latency_ms)
    base_url = f"{root}/api/v1"
    figures: dict[str, list[float]] = {"raw": [], "sqlite": [], "postgres": []}
    cpu: dict[str, list[tuple[float, float]]] = {"raw": [], "sqlite": [], "postgres": []}
    me, epid = os.getpid(), emulator.process.pid
    try:
        warm = load_plan(write_manifest(work / "warm", 20, seed=1), campaign="warmup")
        asyncio.run(raw_loop(base_url, warm, 4))
        for r in range(args.rounds):
            plan = load_plan(manifest, campaign=f"raw-{r}")
            c0, e0 = proc_cpu(me), proc_cpu(epid)
            figures["raw"].append(args.n / asyncio.run(raw_loop(base_url, plan, args.concurrency)))
            cpu["raw"].append((proc_cpu(me) - c0, proc_cpu(epid) - e0))
            ledgers = [("sqlite", f"sqlite:///{work / f'ledger-{r}.db'}")]
            if postgres:
                ledgers.append(("postgres", fresh_database(postgres, f"bench_marginal_{uuid.uuid4().hex[:8]}")))
            for kind, url in ledgers:
                plan = load_plan(manifest, campaign=f"{kind}-{r}")
                before = emulator_checks(root)
                ledger = Ledger(url)
                elapsed, result, used = asyncio.run(submit(base_url, ledger, plan, args.concurrency, epid))
                cpu[kind].append(used)
                ledger.close()
                if result.submitted != args.n or emulator_checks(root) - before != args.n:
                    raise SystemExit(f"{kind} round {r}: expected {args.n} new checks, got {result}")
                figures[kind].append(args.n / elapsed)
    finally:
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)
    raw = max(figures["raw"])

    def cpu_text(kind: str) -> str:
        mine = 1000 * sum(c for c, _ in cpu[kind]) / (args.n * len(cpu[kind]))
        emu = 1000 * sum(e for _, e in cpu[kind]) / (args.n * len(cpu[kind]))
        return f"CPU ms/doc: this process {mine:.2f}, emulator {emu:.2f}"

    print(
        f"marginal submission: {args.n} text documents, concurrency {args.concurrency}, "
        f"emulator latency {args.latency_ms} ms, "
        f"best of {args.rounds} rounds"
    )
    print(f"raw httpx loop: {raw:.1f} docs/s (rounds: {', '.join(f'{x:.1f}' for x in figures['raw'])}); "
          f"{cpu_text('raw')}")  # fmt: skip
    for kind in ("sqlite", "postgres"):
        if figures[kind]:
            best = max(figures[kind])
            print(
                f"submit_batch, {kind} ledger: {best:.1f} docs/s = {best / raw:.2f}x raw "
                f"(rounds: {', '.join(f'{x:.1f}' for x in figures[kind])}); {cpu_text(kind)}"
            )


if __name__ == "__main__":
    main()
