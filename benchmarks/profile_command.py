"""Where the whole ``doccheck run --no-wait`` spends its time a document (issue 26): phases and a profile.

Run:  .venv/bin/python benchmarks/profile_command.py [--small 1000] [--large 3000] [--concurrency 16]
          [--latency-ms 20] [--ledger sqlite|postgres] [--profile out.pstats] [--top 25]

The command's own path without a Prefect server (``doccheck.commands._local_run``: ``run_checks`` with
``LocalSteps``), in this process, against one ``doccheck emulator`` subprocess with ``--latency-ms``.
Each phase of the run is timed by wrapping the steps (prepare = read + record + cohort match;
submit = every batch; close = the summary from the ledger; outputs = reports), at two sizes, so the
marginal cost a document of each phase is ``(t_large - t_small) / (large - small)``. With
``--profile``, the large run's event-loop thread is also profiled with cProfile (the recording
and ledger threads are not in it), and the top entries by own time are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pg_cluster import fresh_database, throwaway_postgres  # noqa: E402
from pipeline_throughput import API_KEY, start_emulator, write_manifest  # noqa: E402

from doccheck.pipeline import RunOptions  # noqa: E402
from doccheck.pipeline import _orchestrate as orchestrate  # noqa: E402


class PhaseClock:
    """Wall seconds of each phase of ``run_checks``, measured by wrapping ``LocalSteps``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started
            self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - cpu


def instrument(clock: PhaseClock) -> None:
    """Time the phases through the steps' and the orchestration's own functions."""
    steps = orchestrate.LocalSteps
    original_prepare, original_outputs = steps.prepare, steps.write_outputs
    original_close, original_submit_all = orchestrate.close_run, orchestrate.submit_all

    async def prepare(self: Any, options: RunOptions) -> Any:
        with clock.phase("prepare (read, record, match)"):
            return await original_prepare(self, options)

    async def write_outputs(self: Any, summary: Any, options: RunOptions) -> Any:
        with clock.phase("write outputs"):
            return await original_outputs(self, summary, options)

    def close_run(*args: Any, **kwargs: Any) -> Any:
        with clock.phase("close run"):
            return original_close(*args, **kwargs)

    async def submit_all(*args: Any, **kwargs: Any) -> Any:
        with clock.phase("submit"):
            return await original_submit_all(*args, **kwargs)

    steps.prepare, steps.write_outputs = prepare, write_outputs  # type: ignore[method-assign]
    orchestrate.close_run, orchestrate.submit_all = close_run, submit_all  # type: ignore[assignment]


def run_once(manifest: Path, base_url: str, database_url: str, out: Path, concurrency: int, **extra: Any) -> float:
    from rich.console import Console

    from doccheck.commands._local_run import run_without_prefect

    options = RunOptions.from_flat(manifest=str(manifest), wait=False, concurrency=concurrency,
                                   base_url=base_url, database_url=database_url, out_dir=str(out), **extra)  # fmt: skip
    started = time.perf_counter()
    summary = run_without_prefect(options, Console(quiet=True), show_progress=False)
    elapsed = time.perf_counter() - started
    assert summary.submitted == summary.documents, summary
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--ledger", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--profile", default=None, help="write the large run's profile here")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--parallel-batches", type=int, default=None)
    parser.add_argument("--raw", action="store_true", help="also time the raw httpx loop at both sizes")
    parser.add_argument(
        "--compare",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="instead: ROUNDS rounds of raw loop, overlapped and sequential phases, interleaved",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="doccheck-profile-command-") as tmp, contextlib.ExitStack() as stack:
        folder = Path(tmp)
        service, root = start_emulator(folder, args.latency_ms)
        stack.callback(service.stop)
        base_url = f"{root}/api/v1"
        os.environ["DOCCHECK_API_KEY"] = API_KEY
        pg = stack.enter_context(throwaway_postgres()) if args.ledger == "postgres" else None
        run_once(write_manifest(folder / "warm", 50, seed=99), base_url, f"sqlite:///{folder / 'warm.db'}",
                 folder / "reports", args.concurrency)  # fmt: skip
        if args.compare:
            compare(args, folder, base_url, pg)
            return
        figures: dict[int, tuple[float, dict[str, float], dict[str, float]]] = {}
        for n, seed in ((args.small, 1), (args.large, 2)):
            clock = PhaseClock()
            instrument(clock)
            db = fresh_database(pg) if pg else f"sqlite:///{folder / f'ledger-{n}.db'}"
            profiler = cProfile.Profile() if args.profile and n == args.large else None
            if profiler is not None:
                profiler.enable()
            total = run_once(write_manifest(folder / f"m{n}", n, seed=seed), base_url, db, folder / "reports",
                             args.concurrency, batch_size=args.batch_size,
                             parallel_batches=args.parallel_batches)  # fmt: skip
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(args.profile)
            figures[n] = (total, dict(clock.seconds), dict(clock.cpu))
            _restore()
        if args.raw:
            from submit_marginal import raw_loop

            from doccheck.pipeline import load_plan

            raw = [asyncio.run(raw_loop(base_url, load_plan(str(write_manifest(folder / f"r{n}", n, seed=n + 5))),
                                        args.concurrency)) for n in (args.small, args.large)]  # fmt: skip
            print(
                f"raw loop: {args.small} {raw[0]:.2f} s, {args.large} {raw[1]:.2f} s, "
                f"marginal {(args.large - args.small) / (raw[1] - raw[0]):.0f} docs/s"
            )
        small_t, small_p, small_c = figures[args.small]
        large_t, large_p, large_c = figures[args.large]
        extra = args.large - args.small
        print(f"\n{args.ledger}, concurrency {args.concurrency}, {args.latency_ms} ms latency")
        print(f"  {'phase':32s} {args.small:>8d} {args.large:>8d} {'ms/doc':>8s} {'cpu ms/doc':>10s}")
        for name in large_p:
            a, b = small_p.get(name, 0.0), large_p[name]
            cpu = 1000 * (large_c.get(name, 0.0) - small_c.get(name, 0.0)) / extra
            print(f"  {name:32s} {a:8.2f} {b:8.2f} {1000 * (b - a) / extra:8.3f} {cpu:10.3f}")
        print(f"  {'whole run':32s} {small_t:8.2f} {large_t:8.2f} {1000 * (large_t - small_t) / extra:8.3f}")
        print(f"  marginal: {extra / (large_t - small_t):.0f} docs/s")
        if args.profile:
            pstats.Stats(args.profile).sort_stats("tottime").print_stats(args.top)


def compare(args: argparse.Namespace, folder: Path, base_url: str, pg: str | None) -> None:
    """Marginal docs/s of the raw loop, the overlapped run and the sequential run, interleaved."""
    from submit_marginal import raw_loop

    from doccheck.commands import _local_run as local_run
    from doccheck.pipeline import OverlappingLocalSteps, load_plan

    rates: dict[str, list[float]] = {}
    seed = 100
    for _ in range(args.compare):
        for mode in ("raw", "overlapped", "sequential"):
            times = []
            for n in (args.small, args.large):
                seed += 1
                manifest = write_manifest(folder / f"c{seed}", n, seed=seed)
                if mode == "raw":
                    times.append(asyncio.run(raw_loop(base_url, load_plan(str(manifest)), args.concurrency)))
                    continue
                local_run.OverlappingLocalSteps = (
                    OverlappingLocalSteps if mode == "overlapped" else orchestrate.LocalSteps
                )  # type: ignore[misc]
                db = fresh_database(pg) if pg else f"sqlite:///{folder / f'c{seed}.db'}"
                times.append(run_once(manifest, base_url, db, folder / "reports", args.concurrency))
            rates.setdefault(mode, []).append((args.large - args.small) / (times[1] - times[0]))
    raw = max(rates["raw"])
    print(
        f"\n{args.ledger}, {args.small} vs {args.large}, concurrency {args.concurrency}, {args.latency_ms} ms, "
        f"best of {args.compare}:"
    )
    for mode, figures in rates.items():
        print(
            f"  {mode:12s} {max(figures):6.0f} docs/s {max(figures) / raw:5.2f}x raw   "
            f"(rounds: {', '.join(f'{r:.0f}' for r in figures)})"
        )


_ORIGINALS = (orchestrate.LocalSteps.prepare, orchestrate.LocalSteps.write_outputs, orchestrate.close_run,
              orchestrate.submit_all)  # fmt: skip


def _restore() -> None:
    steps = orchestrate.LocalSteps
    steps.prepare, steps.write_outputs, orchestrate.close_run, orchestrate.submit_all = _ORIGINALS  # type: ignore[method-assign]


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
