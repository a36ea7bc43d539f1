"""What importing ``prefect_doccheck.credentials`` adds to a Prefect process.

Why: every Prefect process (server, worker, flow run, CLI) imports the package named by
the ``prefect.collections`` entry point, so the blocks module must stay cheap. Baseline
from the same run: a fresh interpreter importing only Prefect's block base
(``prefect.blocks.abstract``), which any Prefect process has loaded anyway. Measured:
CPU time of fresh interpreters (median of ``--runs``, the two interleaved), and ``-X importtime``'s own
cumulative figure for the project's modules.

Run:  .venv/bin/python benchmarks/block_import.py [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys

BASELINE = "import prefect.blocks.abstract"
WITH_BLOCKS = "import prefect.blocks.abstract; import prefect_doccheck.credentials"
WITH_PACKAGE = "import prefect.blocks.abstract; import prefect_doccheck"


def _once(code: str) -> float:
    """CPU seconds (user + system) of one fresh interpreter running ``code``: steadier than
    wall time on a shared machine, where waiting for a core is not the import's cost."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def wall(runs: int) -> tuple[float, float]:
    """Median CPU seconds of fresh interpreters importing the baseline and the blocks,
    interleaved run by run so that a busy machine slows both alike."""
    base, blocks = [], []
    for _ in range(runs):
        base.append(_once(BASELINE))
        blocks.append(_once(WITH_BLOCKS))
    return statistics.median(base), statistics.median(blocks)


def own_import_us() -> dict[str, int]:
    """Cumulative microseconds ``-X importtime`` reports for the project's modules, with
    Prefect's block base imported first (so only what the project adds is counted)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", WITH_PACKAGE], capture_output=True, text=True, check=True
    ).stderr
    figures: dict[str, int] = {}
    for line in out.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2].lstrip().startswith(("prefect_doccheck", "doccheck")):
            figures[parts[2].strip()] = int(parts[1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    base, blocks = wall(args.runs)
    print(f"fresh interpreter, CPU time (user+sys), median of {args.runs}:")
    print(f"  prefect.blocks.abstract alone          {base * 1000:8.0f} ms  (baseline)")
    print(f"  + prefect_doccheck.credentials          {blocks * 1000:8.0f} ms  ({blocks / base:.3f}x baseline)")
    print(f"  added by the blocks module              {(blocks - base) * 1000:8.0f} ms")
    print("-X importtime, cumulative, after prefect.blocks.abstract:")
    for name, us in sorted(own_import_us().items(), key=lambda kv: -kv[1]):
        print(f"  {name:40s} {us / 1000:8.1f} ms")


if __name__ == "__main__":
    main()
