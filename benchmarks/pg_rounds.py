"""The submit path's ledger round on PostgreSQL: array parameters (``unnest``, ``= ANY``) against
multi-row statements, and SQLite beside them (issue 26).

Run:  .venv/bin/python benchmarks/pg_rounds.py [--documents 2000] [--round 16,64] [--repeats 3]

A round is what ``GroupCommit`` commits while a batch is sent: the claims of the next documents
with their ``submitting``/``sending`` (``record_answers_and_claims`` with ``ClaimRequest``\\ s),
then, in a later round, their answers (checks with their charges, the claims released). Per
document, wall and CPU milliseconds of both rounds, on a throwaway PostgreSQL cluster (a fresh
database each time) with the array-parameter statements (``array``) and with the generic ones
SQLite runs (``multi-row``: ``bulk_sql.is_postgres`` forced false), interleaved, best of
``--repeats``; and on a SQLite file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from pg_cluster import fresh_database, throwaway_postgres  # noqa: E402

from doccheck.ledger import Answer, ClaimRequest, Ledger, Prepare, record_answers_and_claims  # noqa: E402
from doccheck.ledger import _bulk_sql as bulk_sql  # noqa: E402


def one_run(url: str, documents: int, size: int) -> tuple[float, float]:
    """(wall ms, CPU ms) a document of claim rounds then answer rounds of ``size``."""
    ledger = Ledger(url)
    try:
        run_id = ledger.start_run(campaign="bench", manifest="bench.csv", products=["ai"])
        del run_id
        owner = f"bench-{uuid.uuid4().hex[:8]}"
        keys = [f"k-{uuid.uuid4().hex}" for _ in range(documents)]
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(0, documents, size):
            chunk = keys[i : i + size]
            claims: list[Any] = [
                ClaimRequest(k, owner, 300.0, Prepare(k, "bench", f"doc-{k}", ("ai",), "text", owner)) for k in chunk
            ]
            record_answers_and_claims(ledger, claims)
            answers: list[Any] = [
                Answer(k, {"id": f"chk-{k}", "products": ["ai"], "ai": {"status": "processing"},
                           "cost": {"total_cents": 12, "ai_cents": 12}, "words": 60}, "text", None, owner)
                for k in chunk
            ]  # fmt: skip
            record_answers_and_claims(ledger, answers)
        return 1000 * (time.perf_counter() - wall) / documents, 1000 * (time.process_time() - cpu) / documents
    finally:
        ledger.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--round", default="16,64")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.round.split(",")]
    original = bulk_sql.is_postgres
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="doccheck-pg-rounds-") as tmp, throwaway_postgres() as pg:
        for _ in range(args.repeats):
            for size in sizes:
                for name in ("array", "multi-row", "sqlite"):
                    bulk_sql.is_postgres = original if name == "array" else (lambda _conn: False)  # type: ignore[assignment]
                    url = (
                        f"sqlite:///{Path(tmp) / f'{uuid.uuid4().hex}.db'}" if name == "sqlite" else fresh_database(pg)
                    )
                    results.setdefault((name, size), []).append(one_run(url, args.documents, size))
        bulk_sql.is_postgres = original  # type: ignore[assignment]
    print(f"\n{args.documents} documents, claim round + answer round each, best of {args.repeats}:")
    print(f"  {'ledger':22s} {'round':>5s} {'wall ms/doc':>11s} {'cpu ms/doc':>10s}")
    for (name, size), figures in results.items():
        label = {"array": "PostgreSQL, array", "multi-row": "PostgreSQL, multi-row", "sqlite": "SQLite"}[name]
        print(f"  {label:22s} {size:5d} {min(w for w, _ in figures):11.3f} {min(c for _, c in figures):10.3f}")


if __name__ == "__main__":
    main()
