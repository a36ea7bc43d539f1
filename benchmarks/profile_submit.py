"""Where ``submit_batch``'s time goes per document (issue 10), next to a raw httpx loop.

Run:  .venv/bin/python benchmarks/profile_submit.py [--n 400] [--concurrency 16] [--latency-ms 20]
                                                    [--start-postgres | --postgres URL] [--top 25]

Against one emulator subprocess (like ``submit_marginal.py``), one raw round then one
``submit_batch`` round per ledger, and for each:

* CPU milliseconds per document of this process and of the emulator process (from
  ``/proc``): on 2 shared cores the emulator's own CPU sets the raw loop's pace, and
  every millisecond the pipeline spends competes with it;
* the ledger writer thread: wall and CPU ms per document of each kind of call
  (``LedgerWriter.call`` wrapped with timers), and how many calls;
* cProfile of the event-loop thread, grouped by area (client request building, JSON,
  httpx/h11, SQLAlchemy, progress, asyncio) and the top functions by own time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pipeline_throughput import emulator_checks, start_emulator, write_manifest  # noqa: E402
from submit_marginal import raw_loop, submit  # noqa: E402

from doccheck.ledger import Ledger  # noqa: E402
from doccheck.pipeline import load_plan  # noqa: E402
from doccheck.pipeline.sending import _ledger_writer as writer_module  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


class WriterTimes:
    """Wraps ``LedgerWriter.call`` to time each call on the writer thread."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.queued: dict[str, float] = defaultdict(float)
        #: cProfile of the writer thread's calls (enabled around each call, on that thread).
        self.profile = cProfile.Profile()
        self.cprofile = True

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        original = writer_module.LedgerWriter.call
        times = self

        async def call(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
            name = _name(fn, args)
            submitted = time.perf_counter()

            def timed() -> Any:
                times.queued[name] += time.perf_counter() - submitted
                w, c = time.perf_counter(), time.thread_time()
                if times.cprofile:
                    times.profile.enable()
                try:
                    return fn(*args, **kwargs)
                finally:
                    if times.cprofile:
                        times.profile.disable()
                    times.wall[name] += time.perf_counter() - w
                    times.cpu[name] += time.thread_time() - c
                    times.count[name] += 1

            return await original(self, timed)

        writer_module.LedgerWriter.call = call  # type: ignore[method-assign]
        try:
            yield
        finally:
            writer_module.LedgerWriter.call = original  # type: ignore[method-assign]


def _name(fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    name = getattr(fn, "__qualname__", repr(fn))
    if name.endswith("many") or "record_" in name:
        return name
    if args and isinstance(args[0], Ledger) and len(args) > 1 and isinstance(args[1], list):
        return f"{name}[{len(args[1])}]"
    return name


AREAS = [
    ("sqlalchemy", ("sqlalchemy",)),
    ("httpx/httpcore/h11", ("httpx", "httpcore", "h11", "anyio")),
    ("json", ("json", "orjson")),
    ("pydantic", ("pydantic",)),
    ("doccheck.client", ("doccheck/client",)),
    ("doccheck.pipeline", ("doccheck/pipeline",)),
    ("doccheck.ledger", ("doccheck/ledger",)),
    ("asyncio", ("asyncio",)),
]


def areas(stats: pstats.Stats) -> dict[str, float]:
    """Own time (tottime) summed per area."""
    out: dict[str, float] = defaultdict(float)
    for (filename, _line, func), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        key = "other"
        for area, needles in AREAS:
            if any(n in filename for n in needles):
                key = area
                break
        if filename == "~":
            key = "builtins:" + func.split(" ")[-1].strip("<>'") if "method" in func else "builtins"
            key = "builtins (C: select, ssl, hashlib...)"
        out[key] += tottime
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--postgres", default=None)
    parser.add_argument("--start-postgres", action="store_true")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--no-cprofile", action="store_true", help="timers only: CPU figures without profiler overhead")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        pg = args.postgres
        if args.start_postgres:
            from pg_cluster import throwaway_postgres

            pg = stack.enter_context(throwaway_postgres())
        run(args, pg)


def run(args: argparse.Namespace, pg: str | None) -> None:
    from pg_cluster import fresh_database

    work = Path(tempfile.mkdtemp(prefix="doccheck-profile-submit-"))
    manifest = write_manifest(work / "corpus", args.n)
    emulator, root = start_emulator(work, args.latency_ms)
    base_url = f"{root}/api/v1"
    epid = emulator.process.pid
    me = os.getpid()
    try:
        asyncio.run(raw_loop(base_url, load_plan(write_manifest(work / "warm", 20, seed=1), campaign="w"), 4))
        plan = load_plan(manifest, campaign="raw")
        c0, e0 = proc_cpu(me), proc_cpu(epid)
        elapsed = asyncio.run(raw_loop(base_url, plan, args.concurrency))
        c1, e1 = proc_cpu(me), proc_cpu(epid)
        n = args.n
        print(f"raw: {n / elapsed:.1f} docs/s; CPU ms/doc: client {1000 * (c1 - c0) / n:.2f}, "
              f"emulator {1000 * (e1 - e0) / n:.2f}")  # fmt: skip
        ledgers = [("sqlite", f"sqlite:///{work / 'ledger.db'}")]
        if pg:
            ledgers.append(("postgres", fresh_database(pg)))
        for kind, url in ledgers:
            plan = load_plan(manifest, campaign=kind)
            ledger = Ledger(url)
            before = emulator_checks(root)
            times = WriterTimes()
            times.cprofile = not args.no_cprofile
            profile = cProfile.Profile()
            with times.installed():
                if times.cprofile:
                    profile.enable()
                elapsed, result, (mine, emu) = asyncio.run(submit(base_url, ledger, plan, args.concurrency, epid))
                if times.cprofile:
                    profile.disable()
            if result.submitted != n or emulator_checks(root) - before != n:  # one request per document
                raise SystemExit(f"{kind}: expected {n} new checks, got {result}")
            print(f"\n== submit_batch, {kind}: {n / elapsed:.1f} docs/s ; CPU ms/doc: "
                  f"pipeline process {1000 * mine / n:.2f} {' (profiled)' if times.cprofile else ''}, emulator {1000 * emu / n:.2f}")  # fmt: skip
            print("writer thread, per document: call kind, calls, wall ms, CPU ms, queued ms (wait for the thread)")
            for name in sorted(times.wall, key=lambda k: -times.wall[k]):
                print(f"  {name:60s} {times.count[name]:5d} {1000 * times.wall[name] / n:7.2f} "
                      f"{1000 * times.cpu[name] / n:7.2f} {1000 * times.queued[name] / n:7.2f}")  # fmt: skip
            if not times.cprofile:
                print(f"  writer thread CPU total {1000 * sum(times.cpu.values()) / n:.2f} ms/doc")
                ledger.engine.dispose()
                continue
            stats = pstats.Stats(profile)
            total = sum(areas(stats).values())
            print(f"event-loop thread (cProfile own time, {1000 * total / n:.2f} ms/doc incl. profiler overhead):")
            for area, secs in sorted(areas(stats).items(), key=lambda kv: -kv[1]):
                print(f"  {area:40s} {1000 * secs / n:7.2f} ms/doc")
            stats.sort_stats("tottime").print_stats(args.top)
            wstats = pstats.Stats(times.profile)
            print(f"writer thread (cProfile own time, {1000 * sum(areas(wstats).values()) / n:.2f} ms/doc):")
            for area, secs in sorted(areas(wstats).items(), key=lambda kv: -kv[1]):
                print(f"  {area:40s} {1000 * secs / n:7.2f} ms/doc")
            wstats.sort_stats("cumulative").print_stats(args.top)
            ledger.engine.dispose()
    finally:
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
