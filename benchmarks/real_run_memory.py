"""Peak RSS of a REAL run (issue 10): streamed batches vs the whole ``Plan``, same run, same emulator.

Run:  .venv/bin/python benchmarks/real_run_memory.py [--rows 20000] [--words 400] [--batch-size 100]
                                                     [--concurrency 16] [--modes whole,streamed]

One ``doccheck emulator`` subprocess (``--offline``, no latency) and one CSV manifest of
generated text rows (``--words`` words each; 400 words ≈ 2.5 KB a row, the issue's term).
Each mode runs in a fresh Python process with its own SQLite ledger and its own campaign (so
every mode sends every document as a new check), library only, no Prefect, and reports its
peak RSS (``ru_maxrss``) after planning/recording and at the end, its seconds and its counts:

* **whole** (the baseline, what ``tasks/_pipeline.py`` does today): ``load_plan`` (every
  document with its text), ``start_run`` + ``record_documents`` + ``record_rejections``,
  then ``submit_batch`` over slices of ``plan.documents`` of ``--batch-size``;
* **streamed**: ``doccheck.pipeline.record_plan`` (one streamed pass, grouped writes,
  a ``BatchRef`` per batch), then per ref ``load_batch`` (seek, re-read, re-plan that batch
  only) and ``submit_batch``;
* **orchestrated**: the real run's whole path as the flow and the notebook run it
  (``run_checks`` with ``LocalSteps``): recording and cohort matching in one streamed read
  (``orchestrate.prepare_run``), batch refs submitted, the run closed and its reports and
  report.html written (``wait=False``: no waiting). Its "after planning" column is the end.

The figures: each mode's peaks and the streamed / whole ratio (target: streamed < 300 MB for
20,000 rows). Submission only: waiting for results is not measured.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pipeline_throughput import API_KEY, emulator_checks, start_emulator  # noqa: E402
from term_scale import make_manifest  # noqa: E402

CHILD = """
import asyncio, json, resource, sys, time
mode, manifest, db, base_url, api_key, batch_size, concurrency = sys.argv[1:8]
batch_size, concurrency = int(batch_size), int(concurrency)

def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

t = time.monotonic()
from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import BatchResult, SubmitOptions, submit_batch
ledger = Ledger("sqlite:///" + db)
campaign = "bench-" + mode
if mode == "whole":
    from doccheck.pipeline import load_plan
    plan = load_plan(manifest, campaign=campaign, products="ai")
    run_id = ledger.start_run(campaign=campaign, manifest=manifest, products=["ai"], params={})
    ledger.record_documents(run_id, plan.documents)
    ledger.record_rejections(run_id, plan.rejections)
    documents = len(plan.documents)
    slices = [plan.documents[i:i + batch_size] for i in range(0, documents, batch_size)]
    def batches():
        for docs in slices:
            yield docs
elif mode.startswith("orchestrated"):
    # the real run's whole path without Prefect: run_checks with LocalSteps (record, cohort
    # matching on a second streamed read, submit batch refs, close, reports), no waiting
    from doccheck.pipeline import LocalSteps, RunOptions, run_checks
    options = RunOptions.from_flat(manifest=manifest, campaign=campaign, products="ai", batch_size=batch_size,
                                   concurrency=concurrency, wait=False, out_dir=db + "-reports")
    documents, planned_s, planned_rss = None, 0.0, 0.0
    def batches():
        return iter(())
else:
    from doccheck.pipeline import load_batch, record_plan
    recorded = record_plan(ledger, manifest, campaign=campaign, products="ai", batch_size=batch_size)
    run_id, documents = recorded.run_id, recorded.documents
    def batches():
        for ref in recorded.batches:
            yield load_batch(ledger, run_id, manifest, ref, campaign=campaign, products="ai")
planned_s, planned_rss = time.monotonic() - t, rss_mb()

async def send():
    total = BatchResult()
    async with AsyncDocCheckClient(base_url, api_key) as client:
        for docs in batches():
            total = total.merge(await submit_batch(client, ledger, run_id, docs, SubmitOptions(concurrency=concurrency)))
    return total

if mode.startswith("orchestrated"):
    async def orchestrated():
        async with AsyncDocCheckClient(base_url, api_key) as client:
            return await run_checks(options, LocalSteps(ledger, client))
    summary = asyncio.run(orchestrated())
    documents, planned_s, planned_rss = summary.documents, summary.elapsed_seconds, rss_mb()
    result = BatchResult(submitted=summary.submitted, failed=summary.submit_failed)
else:
    result = asyncio.run(send())
print(json.dumps({"documents": documents, "submitted": result.submitted, "failed": result.failed,
                  "plan_seconds": planned_s, "plan_rss_mb": planned_rss,
                  "seconds": time.monotonic() - t, "peak_rss_mb": rss_mb()}))
"""


def run_mode(
    mode: str, manifest: Path, work: Path, base_url: str, batch_size: int, concurrency: int
) -> dict[str, float]:
    """One mode in a fresh process; its JSON figures."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(manifest), str(work / f"ledger-{mode}.db"), base_url, API_KEY,
         str(batch_size), str(concurrency)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{out.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--words", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--modes", default="whole,streamed,orchestrated", help="the first is the baseline")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="doccheck-bench-realrun-"))
    manifest = make_manifest(work / "term.csv", args.rows, args.words)
    print(f"real run: {args.rows} text rows of {args.words} words ({manifest.stat().st_size / 1e6:.0f} MB CSV), "
          f"batches of {args.batch_size}, concurrency {args.concurrency}, emulator without latency")  # fmt: skip
    emulator, root = start_emulator(work, 0)
    rows: dict[str, dict[str, float]] = {}
    try:
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            before = emulator_checks(root)
            figures = run_mode(mode, manifest, work, f"{root}/api/v1", args.batch_size, args.concurrency)
            figures["checks"] = emulator_checks(root) - before
            rows[mode] = figures
            print(json.dumps({"mode": mode, **figures}))
    finally:
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)
    base = next(iter(rows.values()))
    print()
    print(
        "| mode | peak RSS after planning | peak RSS at the end | vs baseline | seconds (plan / all) | submitted | new checks |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for mode, f in rows.items():
        print(f"| {mode} | {f['plan_rss_mb']:.0f} MB | {f['peak_rss_mb']:.0f} MB | "
              f"{f['peak_rss_mb'] / base['peak_rss_mb']:.2f}x | {f['plan_seconds']:.1f} / {f['seconds']:.1f} s | "
              f"{f['submitted']:.0f} | {f['checks']:.0f} |")  # fmt: skip
    bad = [m for m, f in rows.items() if f["submitted"] != args.rows or f["checks"] != args.rows]
    if bad:
        raise SystemExit(f"not every document was sent once by: {', '.join(bad)}")


if __name__ == "__main__":
    main()
