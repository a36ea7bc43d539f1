"""Run every benchmark in benchmarks/ with modest sizes and print their figures (``make bench``).

Run:  .venv/bin/python benchmarks/run_all.py [--only NAME[,NAME]] [--quick]

Each benchmark runs as its own subprocess with this interpreter (they start their own
servers: an emulator, a sink, a Prefect server), its output streamed as it comes. A
benchmark file added to benchmarks/ later runs too, with no arguments, unless listed in
``ARGS`` with its own. Exit code 1 if any benchmark failed. Expect about 2.5 minutes on a
2-core machine (``--quick``: smaller sizes, about 1 minute).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Default arguments per benchmark (modest sizes), and the ``--quick`` ones.
ARGS: dict[str, list[str]] = {
    "download_memory": ["--sizes", "5,20"],
    "upload_memory": ["--sizes", "5,15,30"],
    "pipeline_throughput": ["--n", "500"],
    "prefect_batching": ["--n", "1000"],
    "block_import": ["--runs", "5"],
    "catalog_term": ["--documents", "100000"],
    "lms_zip_reads": ["--documents", "200", "--rounds", "1"],
    "remote_sending": ["--n", "300", "--rounds", "1"],
    "bytecode_overhead": ["--rounds", "3"],
}
QUICK: dict[str, list[str]] = {
    "download_memory": ["--sizes", "5"],
    "upload_memory": ["--sizes", "5,15"],
    "pipeline_throughput": ["--n", "200"],
    "prefect_batching": ["--n", "300"],
    "block_import": ["--runs", "3"],
    "catalog_term": ["--documents", "20000"],
    "receiver_flood": ["--events", "300"],
    "lms_zip_reads": ["--documents", "100", "--rounds", "1"],
    "remote_sending": ["--n", "100", "--rounds", "1"],
    "bytecode_overhead": ["--rounds", "1"],
}


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated benchmark names (file names without .py)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args(argv)

    names = sorted(p.stem for p in HERE.glob("*.py") if p.stem != "run_all" and not p.stem.startswith("_"))
    if args.only:
        wanted = {n.strip() for n in args.only.split(",") if n.strip()}
        unknown = wanted - set(names)
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}; have {', '.join(names)}")
        names = [n for n in names if n in wanted]

    print(f"machine: {os.cpu_count()} CPUs, load average {load_average()} (1/5/15 min)", flush=True)
    failed: list[str] = []
    timings: list[tuple[str, float, int]] = []
    for name in names:
        extra = (QUICK if args.quick else ARGS).get(name, [])
        cmd = [sys.executable, str(HERE / f"{name}.py"), *extra]
        print(f"\n=== {name}: {' '.join(['python', f'benchmarks/{name}.py', *extra])}", flush=True)
        started = time.perf_counter()
        code = subprocess.call(cmd, cwd=ROOT)
        elapsed = time.perf_counter() - started
        timings.append((name, elapsed, code))
        if code != 0:
            failed.append(name)

    print(f"\n=== done (load average now {load_average()})")
    for name, elapsed, code in timings:
        print(f"  {name:<22} {elapsed:7.1f} s  {'ok' if code == 0 else f'FAILED (exit {code})'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
