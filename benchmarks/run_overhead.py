"""Fixed overhead of ``doccheck run`` (issue 10): a 10-row real run with a Prefect server already running.

Run:  .venv/bin/python benchmarks/run_overhead.py [--rows 10] [--repeat 3]

Starts one ``doccheck emulator`` and one Prefect server (``prefect server start --no-ui``,
under a temporary ``PREFECT_HOME``), both healthy before the clock starts. Then, alternately,
``--repeat`` times, each in a fresh process on a fresh manifest of ``--rows`` short text rows
(a new campaign, so every document is sent):

* **command**: ``doccheck run MANIFEST --no-wait --no-progress`` with ``PREFECT_API_URL`` set to
  the running server: the flow, its task runs, the ledger and the Parquet reports;
* **library** (the baseline): the same work without Prefect in one ``python -c``: import,
  ``record_plan``, ``load_batch`` + ``submit_batch``, the reports from the ledger.

Both are wall seconds of the whole process (interpreter start and imports included). The
fixed overhead is the command's time (target ≤ 5 s); the difference to the library run is
what orchestration costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pipeline_throughput import API_KEY, start_emulator  # noqa: E402

from doccheck.commands.services import ensure_prefect_server, stop_prefect_server  # noqa: E402

LIBRARY = """
import asyncio, sys
from pathlib import Path
from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import report_tables, submit_batch
from doccheck.pipeline.batches import record_plan
from doccheck.reports import run_label, write_reports
manifest, db, base_url, api_key, out = sys.argv[1:6]
ledger = Ledger("sqlite:///" + db)
recorded = record_plan(ledger, manifest, batch_size=100)
async def send():
    async with AsyncDocCheckClient(base_url, api_key) as client:
        for ref in recorded.batches:
            await submit_batch(client, ledger, recorded.run_id, recorded.load(ledger, ref).documents)
asyncio.run(send())
ledger.finish_run(recorded.run_id)
tables = report_tables(ledger, recorded.run_id)
write_reports(Path(out), run_label(recorded.campaign, recorded.run_id), tables,
              metadata=ledger.document_metadata(recorded.run_id) or None)
"""


def manifest(folder: Path, name: str, rows: int) -> Path:
    path = folder / f"{name}.csv"
    lines = ["document_id,text"] + [f"{name}-{i},a short essay number {i} on rivers and towns" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def timed(args: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.monotonic()
    out = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if out.returncode != 0:
        raise SystemExit(f"{args[:3]} failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="doccheck-bench-overhead-"))
    home = work / "prefect-home"
    emulator, root = start_emulator(work, 0)
    try:
        api_url = ensure_prefect_server(home, ui=False)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOCCHECK_"))}
        env.update(
            PREFECT_HOME=str(home), PREFECT_API_URL=api_url, PREFECT_SERVER_ANALYTICS_ENABLED="false",
            DOCCHECK_BASE_URL=f"{root}/api/v1", DOCCHECK_API_KEY=API_KEY,
            DOCCHECK_DATABASE_URL=f"sqlite:///{work / 'command.db'}", PYTHONPATH=str(ROOT),
        )  # fmt: skip
        doccheck = str(Path(sys.executable).parent / "doccheck")
        command, library = [], []
        for i in range(args.repeat):
            m = manifest(work, f"cmd{i}", args.rows)
            command.append(timed([doccheck, "run", str(m), "--no-wait", "--no-progress", "--out",
                                  str(work / "reports")], env, work))  # fmt: skip
            m = manifest(work, f"lib{i}", args.rows)
            library.append(timed([sys.executable, "-c", LIBRARY, str(m), str(work / "library.db"),
                                  f"{root}/api/v1", API_KEY, str(work / "lib-reports")], env, work))  # fmt: skip
            print(f"round {i + 1}: command {command[-1]:.1f} s, library {library[-1]:.1f} s")
    finally:
        stop_prefect_server(home)
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)
    best_c, best_l = min(command), min(library)
    print(f"\n{args.rows}-row real run, Prefect server running: `doccheck run --no-wait` best {best_c:.1f} s "
          f"(median {sorted(command)[len(command) // 2]:.1f} s); library only best {best_l:.1f} s; "
          f"orchestration adds {best_c - best_l:.1f} s ({best_c / best_l:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
