"""Fixed overhead of ``doccheck run`` (issue 10): seconds to check a tiny manifest, with and
without a running Prefect server, against the work itself.

Run:  .venv/bin/python benchmarks/run_overhead.py [--rows 10] [--rounds 3]

What is measured (wall seconds of the whole command, as a user waits for it):

- ``doccheck run`` of a ``--rows``-row text manifest against the embedded emulator (no
  latency, results polled at once) with ``PREFECT_API_URL`` naming a running
  ``prefect server start`` (the README's setting for real work);
- the same with no server at all (Prefect then starts a temporary one per run);
- the baseline: the same documents through the library pipeline alone
  (``doccheck.pipeline.run_checks`` with ``LocalSteps``, what the notebook runs),
  in a fresh interpreter too, so interpreter and import time are in both.

The difference between a command and the baseline is the fixed overhead of Prefect's
orchestration (flow and task runs, artifacts, the API round trips). Best of ``--rounds``.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk_bench_overhead"
sys.path.insert(0, str(ROOT))

from doccheck.commands import doccheck_command, free_port, prefect_command, wait_healthy  # noqa: E402

BASELINE = """
import asyncio, sys
from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import LocalSteps, RunOptions, run_checks

manifest, base_url, key, db, out = sys.argv[1:6]
options = RunOptions.from_flat(manifest=manifest, base_url=base_url, database_url=db, out_dir=out,
                               grace_seconds=0, poll_interval=0.1)

async def main():
    ledger = Ledger(db)
    async with AsyncDocCheckClient(base_url, key) as client:
        summary = await run_checks(options, LocalSteps(ledger, client))
    ledger.close()
    assert summary.status == "finished", summary

asyncio.run(main())
"""


def make_manifest(path: Path, rows: int, tag: str) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["document_id", "text"])
        writer.writeheader()
        for i in range(rows):
            writer.writerow({"document_id": f"d{i}", "text": f"Essay {tag} {i} about rivers and mills. " * 40})
    return path


def timed(args: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    done = subprocess.run(args, env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{args[:4]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="doccheck-overhead-") as tmp:
        folder = Path(tmp)
        emulator_port, prefect_port = free_port(), free_port()
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOCCHECK_"))}
        base.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_HOME=str(folder / "prefect-home"))
        emulator = subprocess.Popen(
            doccheck_command("emulator", "--port", str(emulator_port), "--storage-port", str(free_port()),
                             "--api-key", KEY),
            env=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        server = subprocess.Popen(
            prefect_command("server", "start", "--host", "127.0.0.1", "--port", str(prefect_port), "--no-ui"),
            env={**base, "PREFECT_HOME": str(folder / "server-home")}, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            emulator_url = f"http://127.0.0.1:{emulator_port}/api/v1"
            api_url = f"http://127.0.0.1:{prefect_port}/api"
            started = time.monotonic()
            if not wait_healthy(f"http://127.0.0.1:{emulator_port}/_emulator/health", timeout=60, process=emulator):
                raise SystemExit("the emulator did not start")
            if not wait_healthy(api_url + "/health", timeout=120, process=server):
                raise SystemExit("the Prefect server did not start")
            print(f"services up in {time.monotonic() - started:.1f} s (not counted)")
            key = KEY
            env = {**base, "DOCCHECK_BASE_URL": emulator_url, "DOCCHECK_API_KEY": key}
            results: dict[str, list[float]] = {
                "library pipeline (baseline)": [],
                "run, server": [],
                "run, no server": [],
            }
            for r in range(args.rounds):
                for name in results:
                    tag = f"{name[:3]}{r}"
                    manifest = make_manifest(folder / f"m-{tag.replace(' ', '')}-{r}.csv", args.rows, tag)
                    db = f"sqlite:///{folder / f'ledger-{r}.db'}"
                    out = str(folder / "reports")
                    if name.startswith("library"):
                        cmd = [sys.executable, "-c", BASELINE, str(manifest), emulator_url, key, db, out]
                        results[name].append(timed(cmd, env))
                        continue
                    cmd = doccheck_command("run", str(manifest), "--database-url", db, "--out", out, "--no-progress",
                                           "--grace-seconds", "0", "--poll-interval", "0.1")  # fmt: skip
                    run_env = {**env, "PREFECT_API_URL": api_url} if name == "run, server" else env
                    results[name].append(timed(cmd, run_env))
            baseline = min(results["library pipeline (baseline)"])
            print(f"\n{args.rows} documents, best of {args.rounds} (seconds, whole command):")
            for name, times in results.items():
                best = min(times)
                print(f"  {name:30s} {best:6.2f} s   overhead vs baseline {best - baseline:+6.2f} s")
        finally:
            for process in (emulator, server):
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()


if __name__ == "__main__":
    main()
