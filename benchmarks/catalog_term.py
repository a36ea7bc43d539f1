"""The term's catalog at scale (issue 40): rebuild time, and query time for a term-wide count
per course, over ``--documents`` documents in ``--runs`` runs.

Run:  .venv/bin/python benchmarks/catalog_term.py [--documents 100000] [--runs 20] [--courses 10]

A generated ``--out`` folder: ``--courses`` campaigns, ``--runs`` run folders between them (each
course's runs after its first are weekly reruns that repeat the course's earlier documents and
add new ones, as a real rerun folder does), each with ``documents.parquet`` and
``submissions.parquet`` of the real schemas and a ``run.json``; ``--documents`` distinct
documents in all. Figures:

* **rebuild**: ``rebuild_catalog`` (scan the folders, create the views, rename), median of 5;
* **count per course**: ``SELECT campaign, count(*), sum(net_cents) FROM documents GROUP BY ALL``
  through ``doccheck.catalog()`` (a fresh connection each time, as a notebook cell), median of 5;
* **baseline**: the same answer the way a data team wrote it before: pandas reads every run
  folder's ``documents.parquet`` and drops repeated documents, keeping the newest run's row.

Target: the term-wide count per course under a second.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from doccheck.outputs import (  # noqa: E402
    SUBMISSIONS_SCHEMA,  # noqa: E402
    connect_catalog,
    rebuild_catalog,
    write_run_file,
)
from doccheck.outputs.instructor import documents_schema  # noqa: E402

T0 = datetime(2026, 9, 1, tzinfo=UTC)


def build_term(out: Path, documents: int, runs: int, courses: int) -> int:
    """The run folders; returns the rows written in all ``documents.parquet`` (reruns repeat rows)."""
    per_course_runs = [runs // courses + (1 if c < runs % courses else 0) for c in range(courses)]
    per_run_new = documents // runs
    rows_written = 0
    next_doc = 0
    for course, count in enumerate(per_course_runs):
        seen: list[int] = []
        for week in range(count):
            new = list(range(next_doc, next_doc + per_run_new))
            next_doc += per_run_new
            ids = seen + new
            started = T0 + timedelta(days=7 * week, minutes=course)
            run_id = f"{course:04d}{week:04d}-run"
            folder = out / f"course-{course}-{started:%Y%m%dT%H%M%S}000Z-{run_id[:8]}"
            folder.mkdir(parents=True)
            n = len(ids)
            doc = [f"d{i}" for i in ids]
            new_flags = [False] * len(seen) + [True] * len(new)
            cents = [30 + i % 7 for i in ids]
            table = pa.table({
                "document_id": doc, "status": ["submitted"] * n, "check_id": [f"c{i}" for i in ids],
                "ai_score": [(i % 100) / 100 for i in ids], "flagged": [i % 9 == 0 for i in ids],
                "charged_cents": cents, "refunded_cents": [0] * n, "net_cents": cents, "cost_cents": cents,
                "new_this_run": new_flags, "campaign": [f"course-{course}"] * n, "run_id": [run_id] * n,
            })  # fmt: skip
            schema = documents_schema([])
            pq.write_table(table.cast(pa.schema([schema.field(c) for c in table.column_names])),
                           folder / "documents.parquet")  # fmt: skip
            subs = pa.table({"document_id": doc, "status": ["submitted"] * n, "check_id": [f"c{i}" for i in ids],
                             "net_cents": cents})  # fmt: skip
            pq.write_table(subs.cast(pa.schema([SUBMISSIONS_SCHEMA.field(c) for c in subs.column_names])),
                           folder / "submissions.parquet")  # fmt: skip
            write_run_file(folder, run_id=run_id, campaign=f"course-{course}", status="finished", started_at=started,
                           finished_at=started + timedelta(hours=1))  # fmt: skip
            seen = ids
            rows_written += n
    return rows_written


def timed(fn: Callable[[], Any], repeat: int = 5) -> tuple[float, Any]:
    """Median seconds of ``repeat`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


QUERY = "SELECT campaign, count(*) AS documents, sum(net_cents) AS cents FROM documents GROUP BY ALL ORDER BY 1"


def baseline(out: Path) -> list[tuple[str, int, int]]:
    """pandas: every folder's documents.parquet, the newest run's row of each document."""
    import pandas as pd

    frames = [pd.read_parquet(p, columns=["document_id", "campaign", "run_id", "net_cents"])
              for p in sorted(out.glob("*-*Z-*/documents.parquet"))]  # fmt: skip
    every = pd.concat(frames, ignore_index=True)
    current = every.sort_values("run_id").drop_duplicates(["campaign", "document_id"], keep="last")
    grouped = current.groupby("campaign").agg(documents=("document_id", "size"), cents=("net_cents", "sum"))
    return [(str(c), int(r.documents), int(r.cents)) for c, r in grouped.sort_index().iterrows()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--courses", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="doccheck-catalog-") as tmp:
        out = Path(tmp) / "reports"
        start = time.perf_counter()
        rows = build_term(out, args.documents, args.runs, args.courses)
        print(f"term: {args.documents:,} documents, {args.runs} runs, {args.courses} courses; "
              f"{rows:,} rows in the runs' documents.parquet (reruns repeat); built in {time.perf_counter() - start:.1f} s")  # fmt: skip
        rebuild_s, _ = timed(lambda: rebuild_catalog(out))
        size = (out / "catalog.duckdb").stat().st_size
        query_s, answer = timed(lambda: connect_catalog(out).execute(QUERY).fetchall())
        base_s, expected = timed(lambda: baseline(out), repeat=3)
        assert [tuple(v if isinstance(v, str) else int(v) for v in row) for row in answer] == expected
        assert sum(int(r[1]) for r in answer) == args.documents // args.runs * args.runs
        print(f"rebuild_catalog: {rebuild_s * 1000:.0f} ms (median of 5); catalog file {size / 1024:.0f} KiB")
        print(f"count per course via doccheck.catalog(): {query_s * 1000:.0f} ms (median of 5; target < 1000 ms)")
        print(f"baseline, pandas read + dedupe of every folder: {base_s * 1000:.0f} ms (median of 3); "
              f"ratio baseline / catalog query: {base_s / query_s:.1f}x")  # fmt: skip
        return 0 if query_s < 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
