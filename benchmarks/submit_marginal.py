"""Marginal submission throughput (issue 10): ``submit_batch`` vs a raw asyncio httpx loop.

Run:  .venv/bin/python benchmarks/submit_marginal.py [--n 400] [--concurrency 16] [--latency-ms 20]
                                                     [--postgres URL]

One ``doccheck emulator`` subprocess with ``--latency-ms`` per request. In the same run,
alternately (raw, pipeline, raw, pipeline: ``--rounds``):

* **raw**: N ``POST /checks`` with the same JSON bodies and Idempotency-Keys style, from a
  plain ``httpx.AsyncClient`` under an ``asyncio.Semaphore(concurrency)``: the network's
  and the emulator's own speed, no ledger;
* **pipeline**: ``doccheck.pipeline.submit_batch`` over the same N planned documents in a
  fresh campaign and a fresh SQLite ledger (``--postgres URL``: also a fresh database on
  that server), at the same concurrency: claims, ``submitting``, the answer, the release.

Every round sends N new checks (fresh keys), so both sides do the same work at the
service. Figures: docs/s of each, and pipeline / raw (target ≥ 0.9 at concurrency 16,
20 ms). Plans are made before the clock starts; only submission is timed.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pipeline_throughput import API_KEY, emulator_checks, start_emulator, submit, write_manifest  # noqa: E402

from doccheck.ledger import Ledger  # noqa: E402
from doccheck.planning import Plan, load_plan  # noqa: E402


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--postgres", default=None, help="also measure a PostgreSQL ledger (server URL)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="doccheck-bench-marginal-"))
    manifest = write_manifest(work / "corpus", args.n)
    emulator, root = start_emulator(work, args.latency_ms)
    base_url = f"{root}/api/v1"
    figures: dict[str, list[float]] = {"raw": [], "sqlite": [], "postgres": []}
    try:
        warm = load_plan(write_manifest(work / "warm", 20, seed=1), campaign="warmup")
        asyncio.run(raw_loop(base_url, warm, 4))
        for r in range(args.rounds):
            plan = load_plan(manifest, campaign=f"raw-{r}")
            figures["raw"].append(args.n / asyncio.run(raw_loop(base_url, plan, args.concurrency)))
            ledgers = [("sqlite", f"sqlite:///{work / f'ledger-{r}.db'}")]
            if args.postgres:
                ledgers.append(("postgres", _fresh_postgres(args.postgres, f"bench_marginal_{uuid.uuid4().hex[:8]}")))
            for kind, url in ledgers:
                plan = load_plan(manifest, campaign=f"{kind}-{r}")
                before = emulator_checks(root)
                elapsed, result, _ = asyncio.run(submit(base_url, Ledger(url), plan, args.concurrency))
                if result.submitted != args.n or emulator_checks(root) - before != args.n:
                    raise SystemExit(f"{kind} round {r}: expected {args.n} new checks, got {result}")
                figures[kind].append(args.n / elapsed)
    finally:
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)
    raw = max(figures["raw"])
    print(
        f"marginal submission: {args.n} text documents, concurrency {args.concurrency}, "
        f"emulator latency {args.latency_ms} ms, best of {args.rounds} rounds"
    )
    print(f"raw httpx loop: {raw:.1f} docs/s (rounds: {', '.join(f'{x:.1f}' for x in figures['raw'])})")
    for kind in ("sqlite", "postgres"):
        if figures[kind]:
            best = max(figures[kind])
            print(
                f"submit_batch, {kind} ledger: {best:.1f} docs/s = {best / raw:.2f}x raw "
                f"(rounds: {', '.join(f'{x:.1f}' for x in figures[kind])})"
            )


def _fresh_postgres(server_url: str, name: str) -> str:
    """A new empty database on ``server_url`` (its URL)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from doccheck.ledger.engine import normalize_url

    url = make_url(normalize_url(server_url))
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


if __name__ == "__main__":
    main()
