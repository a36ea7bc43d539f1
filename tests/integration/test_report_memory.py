"""Writing a run's reports is bounded in memory (issue 10): the Parquet reports stream from
the ledger in chunks and the instructor's files are built from them in chunks, so the
Python heap's peak while writing 8,000 documents stays within 1.5x of 2,000's.

The ledger is filled through the ledger's own ``record_documents``, then the submissions,
outcomes (with sources and a large raw check JSON, which the reports must never load) and
check costs are inserted in bulk, as many ``mark_submitted``/``record_check`` calls would
leave them, so that the test takes seconds. SQLite here, PostgreSQL below.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import insert

from doccheck.ledger import Ledger, OutcomeRow, SubmissionRow
from doccheck.outputs import LedgerReportTables, write_reports
from doccheck.outputs.instructor import write_instructor_files
from doccheck.sources.manifest import Rejection
from tests.factories import planned

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RAW = {"padding": "x" * 8_000}  # a check's raw JSON: the reports must not read it


def fill(ledger: Ledger, campaign: str, n: int) -> str:
    """A run of ``n`` documents, each submitted, with both products completed and three sources."""
    run_id = ledger.start_run(campaign=campaign)
    docs = [planned(f"{campaign}-d{i}", ("ai", "similarity"), row=i + 1) for i in range(n)]
    for i in range(0, n, 1000):
        ledger.record_documents(run_id, docs[i : i + 1000])
    ledger.record_rejections(run_id, [Rejection(n + 1, f"{campaign}-bad", "text", "empty_text", "row: empty")])
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with ledger.session() as s:
        conn = s.connection()
        for start in range(0, n, 1000):
            part = docs[start : start + 1000]
            conn.execute(insert(SubmissionRow), [
                {"campaign": campaign, "document_id": d.document_id, "idempotency_key": d.idempotency_key,
                 "products": list(d.products), "mode": "text", "state": "submitted",
                 "check_id": f"chk-{d.document_id}", "words": 40, "cost_cents": 3}
                for d in part
            ])  # fmt: skip
            outcomes = []
            for i, d in enumerate(part, start=start):
                cid = f"chk-{d.document_id}"
                outcomes.append({"check_id": cid, "product": "ai", "campaign": campaign, "status": "completed",
                                 "fetched": True, "score": (i % 100) / 100, "label": "human", "matched_words": None,
                                 "source_count": None, "sources": None, "completed_at": now, "raw": RAW,
                                 "updated_at": now})  # fmt: skip
                sources = [
                    {"source_id": f"chk-{campaign}-d{(i + k) % n}", "title": f"source {k}", "url": "https://e.org",
                     "kind": "submission" if k == 0 else "web", "matched_words": k + 1, "percent": 1.5 * k}
                    for k in range(3)
                ]  # fmt: skip
                outcomes.append({"check_id": cid, "product": "similarity", "campaign": campaign,
                                 "status": "completed", "fetched": True, "score": float(i % 100),
                                 "label": None, "matched_words": 3, "source_count": 3, "sources": sources, "completed_at": now,
                                 "raw": RAW, "updated_at": now})  # fmt: skip
            conn.execute(insert(OutcomeRow), outcomes)
        s.commit()
    return run_id


def write_peak(ledger: Ledger, run_id: str, out: Path) -> tuple[int, Path]:
    """Peak bytes of the Python heap while the run's Parquet reports and instructor files are written."""
    metadata = ledger.document_metadata(run_id)  # the caller's, held before: not what is measured
    tracemalloc.start()
    try:
        paths = write_reports(out, "run", LedgerReportTables.from_ledger(ledger, run_id=run_id), metadata=metadata)
        write_instructor_files(paths.run_dir, paths.latest_dir, campaign="c", run_id=run_id)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, paths.run_dir


def assert_bounded(ledger: Ledger, tmp_path: Path) -> None:
    write_peak(ledger, fill(ledger, "warm", 50), tmp_path / "warm")  # imports, compiled template, caches
    small_id, large_id = fill(ledger, "small", 2_000), fill(ledger, "large", 8_000)
    small, _ = write_peak(ledger, small_id, tmp_path / "small")
    large, run_dir = write_peak(ledger, large_id, tmp_path / "large")
    # Everything was written: every document (and the rejected row), every source.
    assert pq.read_metadata(run_dir / "submissions.parquet").num_rows == 8_001
    assert pq.read_metadata(run_dir / "similarity_sources.parquet").num_rows == 24_000
    assert pq.read_metadata(run_dir / "documents.parquet").num_rows == 8_001
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    rows = page.split('<script type="application/json" id="doccheck-rows">')[1].split("</script>")[0]
    assert len(json.loads(rows)) == 8_000  # every document as the table's data
    assert large < 1.5 * small, f"peak {large / 1e6:.1f} MB for 8,000 documents vs {small / 1e6:.1f} MB for 2,000"


def test_report_writing_is_bounded_sqlite(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        assert_bounded(ledger, tmp_path)
    finally:
        ledger.close()


@pytest.fixture
def pg_ledger(postgres_database: str) -> Iterator[Ledger]:
    led = Ledger(postgres_database)
    yield led
    led.close()


@pytest.mark.postgres
def test_report_writing_is_bounded_postgres(pg_ledger: Ledger, tmp_path: Path) -> None:
    assert_bounded(pg_ledger, tmp_path)


def test_streamed_outputs_carry_names_and_rows_of_the_ledger(tmp_path: Path) -> None:
    """The chunked path end to end (2,500 documents: two chunks of the wide table, three of the
    report): names read per chunk from the ledger, every row once, in row order, the same rows
    as the in-memory report."""
    import asyncio

    from doccheck.outputs.instructor import write_run_outputs

    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        run_id = fill(ledger, "c", 2_500)
        tables = LedgerReportTables.from_ledger(ledger, run_id=run_id)
        paths = write_reports(tmp_path / "out", "run", tables, metadata=ledger.document_metadata(run_id))
        outputs = asyncio.run(write_run_outputs(paths.run_dir, paths.latest_dir, campaign="c", run_id=run_id,
                                                ledger=ledger))  # fmt: skip
        rows = ledger.report_rows(run_id=run_id)
    finally:
        ledger.close()
    for name in ("submissions", "ai_results", "similarity_results", "similarity_sources"):
        written = pq.read_table(paths.files()[name]).to_pylist()
        assert [r["document_id"] for r in written] == [r["document_id"] for r in rows[name]], name
    documents = pq.read_table(outputs.paths.documents_parquet).to_pylist()
    assert [d["document_id"] for d in documents] == [*(f"c-d{i}" for i in range(2_500)), "c-bad"]
    assert documents[0]["name"] == "c-d0.txt" and documents[2_499]["name"] == "c-d2499.txt"
    assert documents[0]["meta_group"] == "A" and documents[-1]["status"] == "rejected"
    # the top source: the one with the most matched words (the third of each document)
    assert documents[7]["top_source_title"] == "source 2"
    assert (paths.latest_dir / "documents.csv").read_bytes() == outputs.paths.documents_csv.read_bytes()
