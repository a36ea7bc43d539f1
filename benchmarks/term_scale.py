"""Term scale (issue 10): a dry run's peak RSS and seconds vs the manifest's size, and start-up cost.

Run:  .venv/bin/python benchmarks/term_scale.py [--rows 10000,100000] [--words 400] [--startup]

For each size, a CSV manifest of generated text rows (``--words`` words each, ~6 bytes a
word: 400 words ≈ 2.5 KB a row, the issue's 250 MB per 100,000 rows) is dry-run in a fresh
process with ``doccheck.pipeline.dry_run.dry_run`` (validate → plan → cohort matching, what
``doccheck run --dry-run`` does); the child reports its peak RSS (``ru_maxrss``) and its
seconds (wall, and CPU: on a shared machine the CPU seconds say what the load hides). The
first size is the baseline: the figures are printed with their ratio to it.

``--no-match``: validate and plan only, to tell planning's memory from cohort matching's.

``--background bg|both``: the matching in a second process fed while the manifest is planned
(``dry_run(background=True)``); peak RSS is then the parent's plus the child's (an upper
bound of the pair's peak), CPU both processes'. ``both`` runs in-process and background
alternately on the same manifest, the first one being the baseline.

``--startup``: wall seconds of ``doccheck run --dry-run`` on a 100-row manifest as a
command (no Prefect server needed), against the flow's dry run (``bulk_check(dry_run=True)``)
without ``PREFECT_API_URL``, which is how a dry run started before issue 10: Prefect then
starts a temporary server.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

CHILD = """
import json, resource, sys, time
t = time.monotonic()
from doccheck.pipeline.dry_run import dry_run
background = {"in": False, "bg": True, "auto": None}[sys.argv[3]]
s = dry_run(sys.argv[1], database_url=None, match=sys.argv[2] == "match", background=background)
u, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": time.monotonic() - t, "documents": s.documents, "pairs": s.cohort_matches.get("pairs"),
                  "cpu_seconds": u.ru_utime + u.ru_stime + c.ru_utime + c.ru_stime,
                  "peak_rss_mb": (u.ru_maxrss + c.ru_maxrss) / 1024, "child_rss_mb": c.ru_maxrss / 1024}))
"""

FLOW_DRY_RUN = """
import asyncio, sys
from doccheck.pipeline.options import RunOptions
from prefect_doccheck.flows.bulk_check import bulk_check
asyncio.run(bulk_check(**RunOptions.from_flat(manifest=sys.argv[1], dry_run=True, database_url="sqlite:///" + sys.argv[2]).flow_parameters()))
"""


def make_manifest(path: Path, rows: int, words: int, seed: int = 10) -> Path:
    """``rows`` text rows of ``words`` random words from a 5,000-word vocabulary (no near-duplicates)."""
    rnd = random.Random(seed)
    vocabulary = [f"{rnd.choice('bcdfghklmnprstvw')}{rnd.choice('aeiou')}{i:x}" for i in range(5000)]
    with path.open("w", encoding="utf-8") as handle:
        handle.write("document_id,text\n")
        for i in range(rows):
            handle.write(f"s{i:07d},{' '.join(rnd.choices(vocabulary, k=words))}\n")
    return path


def measure(manifest: Path, match: bool, background: str = "in") -> dict[str, float]:
    out = subprocess.run(
        [PY, "-c", CHILD, str(manifest), "match" if match else "plan", background],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def startup(folder: Path) -> None:
    manifest = make_manifest(folder / "hundred.csv", 100, 200)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(folder / "prefect-home"), DOCCHECK_DATABASE_URL=f"sqlite:///{folder / 'none.db'}")
    started = time.monotonic()
    subprocess.run(
        [str(Path(PY).parent / "doccheck"), "run", str(manifest), "--dry-run"],
        env=env,
        cwd=folder,
        check=True,
        capture_output=True,
    )
    command = time.monotonic() - started
    started = time.monotonic()
    subprocess.run(
        [PY, "-c", FLOW_DRY_RUN, str(manifest), str(folder / "flow.db")],
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=folder,
        check=True,
        capture_output=True,
    )
    flow = time.monotonic() - started
    print(
        f"start-up, 100-row dry run: command {command:.1f} s; flow with a temporary Prefect server {flow:.1f} s "
        f"(ratio {flow / command:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="10000,100000")
    parser.add_argument("--words", type=int, default=400)
    parser.add_argument("--startup", action="store_true")
    parser.add_argument("--no-match", action="store_true", help="plan only (no cohort matching)")
    parser.add_argument(
        "--background",
        choices=["in", "bg", "both"],
        default="in",
        help="match in this process (in), in a second process fed while planning (bg), or both, alternating",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="doccheck-scale-") as tmp:
        folder = Path(tmp)
        if args.startup:
            startup(folder)
        base: dict[str, float] | None = None
        for rows in [int(r) for r in args.rows.split(",")]:
            manifest = make_manifest(folder / f"term{rows}.csv", rows, args.words)
            size_mb = manifest.stat().st_size / 1e6
            modes = ["in", "bg"] if args.background == "both" else [args.background]
            for mode in modes:
                figures = measure(manifest, not args.no_match, mode)
                base = base or figures
                what = "plan only" if args.no_match else "dry run" if mode == "in" else "dry run, bg"
                child = f" (child {figures['child_rss_mb']:.0f})" if mode == "bg" else ""
                print(
                    f"{what} {rows:>7} rows ({size_mb:.0f} MB CSV): peak RSS {figures['peak_rss_mb']:.0f} MB{child} "
                    f"({figures['peak_rss_mb'] / base['peak_rss_mb']:.2f}x baseline), {figures['seconds']:.1f} s "
                    f"({figures['seconds'] / base['seconds']:.2f}x; CPU {figures['cpu_seconds']:.1f} s), "
                    f"{figures['documents']} documents, {figures['pairs']} pairs"
                )
            manifest.unlink()


if __name__ == "__main__":
    main()
