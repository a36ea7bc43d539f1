"""What compiled bytecode at install saves every process (``uv pip install --compile-bytecode``).

Why: with ``PYTHONDONTWRITEBYTECODE=1`` (this environment, CI, most container images) no process
writes the ``.pyc`` files it compiles, so without bytecode compiled at install every process
compiles again each module it imports (~1,100 for a run). The Makefile installs with
``--compile-bytecode`` since 352f3f2; this measures what that buys.

Run:  .venv/bin/python benchmarks/bytecode_overhead.py [--rounds 5] [--rows 10] [--keep DIR]

Two fresh venvs are made in a temporary folder from the lock, by the Makefile's install command
(``uv pip install --quiet [--compile-bytecode] --python VENV/bin/python -c
requirements/constraints.txt -e ".[dev]"``; uv is this checkout's, the same pinned version), one
with ``--compile-bytecode`` and one without. Both install this checkout editable, so doccheck's
own modules are the same files in both: only the installed packages differ. Then, with
``PYTHONDONTWRITEBYTECODE=1``, each venv runs in turn (interleaved round by round, so a busy
machine slows both alike):

- ``doccheck --help``;
- ``doccheck run --no-prefect`` of a fresh ``--rows``-document text manifest into a fresh SQLite
  ledger against the embedded emulator (``doccheck emulator``, started once from this checkout),
  results polled at once (``--grace-seconds 0 --poll-interval 0.1``).

Each command's CPU seconds (user + system, from ``os.wait4``: the child and what it waited for)
and wall seconds; medians of the rounds and their ratio (without / with).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk_bench_bytecode"
sys.path.insert(0, str(ROOT))

from doccheck.commands import doccheck_command, free_port, wait_healthy  # noqa: E402

VARIANTS = {"compiled": ["--compile-bytecode"], "not compiled": []}


def make_venv(folder: Path, flags: list[str]) -> Path:
    """A venv at ``folder`` with the lock installed as the Makefile installs it; its python."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    uv = Path(sys.executable).with_name("uv")
    started = time.monotonic()
    subprocess.run(
        [str(uv), "pip", "install", "--quiet", *flags, "--python", str(python),
         "-c", "requirements/constraints.txt", "-e", ".[dev]"],
        check=True, cwd=ROOT,
    )  # fmt: skip
    print(f"  {folder.name}: installed in {time.monotonic() - started:.1f} s, {count_pyc(folder)} .pyc files")
    return python


def count_pyc(venv: Path) -> int:
    return sum(1 for _ in venv.glob("lib/python*/site-packages/**/__pycache__/*.pyc"))


def measured(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command; exits with its output if it fails."""
    started = time.perf_counter()
    child = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert child.stdout is not None
    with child.stdout:
        output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)  # reaped here, so Popen.wait must not be called
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{args[1:4]} failed ({child.returncode}):\n{output.decode(errors='replace')[-3000:]}")
    return usage.ru_utime + usage.ru_stime, elapsed


def make_manifest(path: Path, rows: int, tag: str) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["document_id", "text"])
        writer.writeheader()
        for i in range(rows):
            writer.writerow({"document_id": f"d{i}", "text": f"Essay {tag} {i} about weirs and sluices. " * 40})
    return path


def commands(python: Path, work: Path, rows: int, tag: str) -> dict[str, list[str]]:
    """The two measured commands of one venv, on a fresh manifest and ledger."""
    doccheck = str(python.with_name("doccheck"))
    manifest = make_manifest(work / f"m-{tag}.csv", rows, tag)
    run = [doccheck, "run", str(manifest), "--no-prefect", "--no-progress", "--grace-seconds", "0",
           "--poll-interval", "0.1", "--database-url", f"sqlite:///{work / f'ledger-{tag}.db'}",
           "--out", str(work / f"reports-{tag}")]  # fmt: skip
    return {"doccheck --help": [doccheck, "--help"], f"doccheck run --no-prefect, {rows} documents": run}


def report(results: dict[tuple[str, str], list[tuple[float, float]]], rounds: int) -> None:
    print(f"\nmedian of {rounds} rounds, PYTHONDONTWRITEBYTECODE=1:")
    print(f"  {'command':42s} {'venv':13s} {'CPU s':>7s} {'wall s':>7s}")
    for what in dict.fromkeys(name for name, _ in results):
        cpu = {v: statistics.median(c for c, _ in results[(what, v)]) for v in VARIANTS}
        wall = {v: statistics.median(w for _, w in results[(what, v)]) for v in VARIANTS}
        for variant in VARIANTS:
            print(f"  {what:42s} {variant:13s} {cpu[variant]:7.2f} {wall[variant]:7.2f}")
        print(f"  {'':42s} {'ratio':13s} {cpu['not compiled'] / cpu['compiled']:6.2f}x "
              f"{wall['not compiled'] / wall['compiled']:6.2f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="make the venvs here and keep them (default: a temporary folder)")
    args = parser.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="doccheck-bytecode-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"cpus {os.cpu_count()}, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; venvs in {folder}")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOCCHECK_", "VIRTUAL_ENV"))}
    base.update(PYTHONDONTWRITEBYTECODE="1", PREFECT_SERVER_ANALYTICS_ENABLED="false",
                PREFECT_HOME=str(folder / "prefect-home"), COLUMNS="100")  # fmt: skip
    emulator = None
    try:
        pythons = {v: make_venv(folder / v.replace(" ", "-"), flags) for v, flags in VARIANTS.items()}
        port = free_port()
        emulator = subprocess.Popen(
            doccheck_command("emulator", "--port", str(port), "--storage-port", str(free_port()), "--api-key", KEY),
            env=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        if not wait_healthy(f"http://127.0.0.1:{port}/_emulator/health", timeout=60, process=emulator):
            raise SystemExit("the emulator did not start")
        env = {**base, "DOCCHECK_BASE_URL": f"http://127.0.0.1:{port}/api/v1", "DOCCHECK_API_KEY": KEY}
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for r in range(args.rounds):
            for variant, python in pythons.items() if r % 2 == 0 else reversed(pythons.items()):
                tag = f"{variant[:3]}{r}"
                for what, argv in commands(python, folder, args.rows, tag).items():
                    results.setdefault((what, variant), []).append(measured(argv, env, folder))
            print(f"  round {r + 1} of {args.rounds} done")
        report(results, args.rounds)
    finally:
        if emulator is not None:
            emulator.terminate()
            emulator.wait(timeout=15)
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
