"""Which catalog a term can afford (issue 48): views over the run folders' files (what doccheck
writes) against a catalog that holds copies of the tables, rebuilt over ``--runs`` run folders
of ``--documents`` rows each, every table with all its columns.

Run:  .venv/bin/python benchmarks/catalog_choice.py [--documents 100000] [--runs 1]

Each way is measured in a fresh process (``ru_maxrss``), after the same imports a run has made
by its end (pyarrow, DuckDB, doccheck.outputs), so the figure is what the rebuild adds to the
run's peak:

* **views** (doccheck's): ``rebuild_catalog``: the run metadata and the views' definitions;
* **tables**: ``CREATE TABLE … AS SELECT * FROM read_parquet(…)`` per table, DuckDB's defaults;
* **tables, bounded**: the same with one thread, ``memory_limit`` 64 MB and insertion order not
  kept (DuckDB's own advice for a smaller footprint; 32 MB and below failed with "could not
  allocate block" at the commit of a 100,000-row table).

A 100,000-document term's run peaks at 270-300 MB with the views (docs/benchmarks.md); its
budget is 300 MB.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MEASURE = r"""
import glob, resource, sys, time
from pathlib import Path
import duckdb, pyarrow  # what a run has loaded by its end
from doccheck.outputs import rebuild_catalog
way, out, settings = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
def peak(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
base = peak(); start = time.perf_counter()
target = out / "catalog.duckdb"
target.unlink(missing_ok=True)
if way == "views":
    rebuild_catalog(out)
else:
    con = duckdb.connect(str(target))
    for statement in ["SET enable_progress_bar = false", *settings]:
        con.execute(statement).fetchall()
    for name in ("documents", "submissions", "ai_results", "similarity_results", "similarity_sources", "cohort_matches"):
        files = ", ".join(repr(f) for f in sorted(glob.glob(str(out / "*" / f"{name}.parquet"))))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet([{files}], union_by_name = true)").fetchall()
    con.execute("CHECKPOINT").fetchall()
    con.close()
print(f"{peak() - base:.0f} {time.perf_counter() - start:.2f} {target.stat().st_size / 2**20:.1f}")
"""

WAYS = {
    "views (doccheck's)": ("views", []),
    "tables, DuckDB's defaults": ("tables", []),
    "tables, bounded": (
        "tables",
        ["SET threads = 1", "SET memory_limit = '64MB'", "SET preserve_insertion_order = false"],
    ),
}


def build_term(out: Path, documents: int, runs: int) -> None:
    """``runs`` run folders of ``documents`` rows in every table (cohort pairs: a tenth), all columns filled."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from doccheck.outputs import SCHEMAS, write_run_file
    from doccheck.outputs.instructor import documents_schema

    def column(field: pa.Field, n: int, first: int) -> pa.Array:
        kind, name, ids = field.type, field.name, range(first, first + n)
        if pa.types.is_string(kind):
            if name == "document_id":
                values: list[object] = [f"student-{i:06d}/essay-{i % 7}.docx" for i in ids]
            elif "url" in name:
                values = [f"https://example.org/sources/{i * 7919 % 100000}/an-article" for i in ids]
            elif "message" in name or "note" in name:
                values = [None if i % 5 else "the service's own words about this document" for i in ids]
            else:
                values = [f"{name[:6]}-{i % 97}" for i in ids]
        elif pa.types.is_integer(kind):
            values = [i % 5000 for i in ids]
        elif pa.types.is_floating(kind):
            values = [i % 1000 / 1000 for i in ids]
        elif pa.types.is_boolean(kind):
            values = [i % 3 == 0 for i in ids]
        elif pa.types.is_timestamp(kind):
            values = [datetime(2026, 9, 1, tzinfo=UTC) + timedelta(seconds=i) for i in ids]
        else:
            values = [["ai", "similarity"] for _ in ids]
        return pa.array(values, kind)

    tables = {"documents": documents_schema([]), **SCHEMAS}
    for run in range(runs):
        folder = out / f"course-a-2026090{run + 1}T000000000Z-run{run:05d}"
        folder.mkdir(parents=True)
        for name, schema in tables.items():
            rows = documents // 10 if name == "cohort_matches" else documents
            with pq.ParquetWriter(folder / f"{name}.parquet", schema) as writer:
                for first in range(0, rows, 10_000):  # row groups as a run writes them: chunk by chunk
                    n = min(10_000, rows - first)
                    writer.write_table(pa.table([column(f, n, first) for f in schema], schema=schema))
        write_run_file(folder, run_id=f"run{run:05d}", campaign="course-a", status="finished",
                       started_at=datetime(2026, 9, 1 + run, tzinfo=UTC))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="doccheck-catalog-choice-") as tmp:
        out = Path(tmp) / "reports"
        build_term(out, args.documents, args.runs)
        size = sum(p.stat().st_size for p in out.rglob("*.parquet")) / 2**20
        print(f"{args.runs} run folder(s) of {args.documents:,} rows a table: {size:.1f} MiB of Parquet")
        print(f"{'way':28} {'adds to the peak':>17} {'rebuild':>9} {'catalog file':>13}")
        for label, (way, settings) in WAYS.items():
            done = subprocess.run([sys.executable, "-c", MEASURE, way, str(out), *settings], cwd=ROOT,
                                  capture_output=True, text=True, check=False)  # fmt: skip
            if done.returncode != 0 or len(done.stdout.split()) < 3:
                print(f"{label:28} failed: {done.stderr.strip().splitlines()[-1]}")
                continue
            added, seconds, mib = done.stdout.split()[-3:]  # the figures: the last line
            print(f"{label:28} {added:>14} MB {seconds:>7} s {mib:>9} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
