"""Parquet reports: schemas kept when empty, types round-trip, latest/ refreshed, metadata joined."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from doccheck.errors import ReportError
from doccheck.outputs._parquet_reports import (
    AI_RESULTS_SCHEMA,
    SCHEMAS,
    SIMILARITY_RESULTS_SCHEMA,
    SIMILARITY_SOURCES_SCHEMA,
    SUBMISSIONS_SCHEMA,
    ReportTables,
    rejection_rows,
    to_dataframes,
    write_reports,
)
from doccheck.sources.manifest import Rejection

ISSUE_COLUMNS = {
    "submissions": [
        "document_id", "mode", "idempotency_key", "check_id", "products", "status",
        "error_code", "error_message", "words", "cost_cents",
    ],
    "ai_results": ["document_id", "check_id", "status", "score", "label", "words", "completed_at", "error_code"],
    "similarity_results": [
        "document_id", "check_id", "status", "score", "matched_words", "source_count", "completed_at", "error_code",
    ],
    "similarity_sources": [
        "document_id", "check_id", "source_id", "title", "url", "kind", "matched_words", "percent", "matched_document_id",
    ],
    "cohort_matches": [
        "document_id", "matched_document_id", "kind", "percent", "matched_percent", "matched_words", "jaccard",
        "run_id", "matched_run_id",
    ],
}  # fmt: skip


def sample_tables() -> ReportTables:
    done = datetime(2026, 11, 22, 10, 0, 0, 123000, tzinfo=UTC)
    return ReportTables(
        submissions=[
            {
                "document_id": "a", "row_number": 1, "mode": "multipart", "idempotency_key": "dc1-x",
                "check_id": "c-1", "products": ("ai", "similarity"), "status": "completed",
                "words": 250, "cost_cents": 9, "unexpected": "ignored",
            },
            {"document_id": "b", "row_number": 2, "mode": "text", "products": "ai", "status": "processing"},
            *rejection_rows([Rejection(3, "c", "path", "file_not_found", "row 3: path: file 'x' does not exist")]),
        ],
        ai_results=[
            {"document_id": "a", "check_id": "c-1", "status": "completed", "score": 0.25, "label": "human",
             "words": 250, "completed_at": done},
            {"document_id": "b", "check_id": "c-2", "status": "failed", "error_code": "processing_failed",
             "completed_at": "2026-11-22T10:00:01.500Z"},
        ],
        similarity_results=[
            {"document_id": "a", "check_id": "c-1", "status": "completed", "score": 42, "matched_words": 105,
             "source_count": 1, "completed_at": datetime(2026, 11, 22, 11, 0, tzinfo=timezone(timedelta(hours=1)))},
        ],
        similarity_sources=[
            {"document_id": "a", "check_id": "c-1", "source_id": "s-9", "title": "Essay B",
             "url": None, "kind": "submission", "matched_words": 105, "percent": 42.0},
        ],
    )  # fmt: skip


def test_schemas_have_the_issue_columns() -> None:
    lms = [
        "lms",
        "student_id",
        "student",
        "late",
        "attempt",
        "submitted_file",
        "email",
        "section",
        "export_name",
        "new_this_run",
        "sent_as",
        "read_as",  # issue 41: what the file was read as, the type its name says, whether they differ
        "named_as",
        "misnamed",
    ]
    product = ["error_message", "contradiction"]  # the service's words, a contradicted result (issue 39)
    added = {
        "submissions": ["charged_cents", "refunded_cents", "net_cents", *lms],
        "ai_results": product,
        "similarity_results": product,
    }  # additive, at the end
    for name, columns in ISSUE_COLUMNS.items():
        names = SCHEMAS[name].names
        assert [c for c in names if c != "row_number"] == columns + added.get(name, [])
    assert SUBMISSIONS_SCHEMA.field("row_number").type == pa.int64()
    for schema in (AI_RESULTS_SCHEMA, SIMILARITY_RESULTS_SCHEMA):
        assert schema.field("completed_at").type == pa.timestamp("ms", tz="UTC")
    assert SIMILARITY_SOURCES_SCHEMA.field("percent").type == pa.float64()


def test_empty_reports_keep_schema(tmp_path: Path) -> None:
    paths = write_reports(tmp_path, "run-empty", ReportTables())
    for name, file in paths.files().items():
        table = pq.read_table(file)
        assert table.num_rows == 0
        assert table.schema.equals(SCHEMAS[name], check_metadata=False)
        assert pq.read_table(paths.latest_dir / file.name).schema.equals(SCHEMAS[name], check_metadata=False)
    frames = to_dataframes(ReportTables())
    assert list(frames["ai_results"].columns) == AI_RESULTS_SCHEMA.names
    assert str(frames["ai_results"]["completed_at"].dtype) == "timestamp[ms, tz=UTC][pyarrow]"


def test_round_trip_types_and_values(tmp_path: Path) -> None:
    paths = write_reports(tmp_path, "2026-11-22T10-00-00Z", sample_tables())
    subs = pq.read_table(paths.submissions)
    assert subs.schema.equals(SUBMISSIONS_SCHEMA, check_metadata=False)
    rows = subs.to_pylist()
    assert rows[0]["products"] == ["ai", "similarity"] and rows[0]["cost_cents"] == 9
    assert rows[1]["products"] == ["ai"] and rows[1]["check_id"] is None and rows[1]["words"] is None
    assert rows[2] == {
        "document_id": "c", "row_number": 3, "mode": "rejected", "idempotency_key": None, "check_id": None,
        "products": None, "status": "rejected", "error_code": "file_not_found",
        "error_message": "row 3: path: file 'x' does not exist", "words": None, "cost_cents": 0,
        "charged_cents": 0, "refunded_cents": 0, "net_cents": 0,
        # a manifest's row: the LMS columns (issue 24) are null
        "lms": None, "student_id": None, "student": None, "late": None, "attempt": None, "submitted_file": None,
        "email": None, "section": None, "export_name": None, "new_this_run": None, "sent_as": None,
        "read_as": None, "named_as": None, "misnamed": None,  # a rejected row: not read as anything
    }  # fmt: skip
    ai = pq.read_table(paths.ai_results).to_pylist()
    assert ai[0]["completed_at"] == datetime(2026, 11, 22, 10, 0, 0, 123000, tzinfo=UTC)
    assert ai[1]["completed_at"] == datetime(2026, 11, 22, 10, 0, 1, 500000, tzinfo=UTC)
    assert ai[1]["score"] is None and ai[1]["error_code"] == "processing_failed"
    sim = pq.read_table(paths.similarity_results).to_pylist()
    assert sim[0]["score"] == 42.0 and sim[0]["completed_at"] == datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    src = pq.read_table(paths.similarity_sources).to_pylist()
    assert src[0]["url"] is None and src[0]["matched_words"] == 105
    # DataFrames carry the very same schema.
    frames = to_dataframes(sample_tables())
    for name, frame in frames.items():
        back = pa.Table.from_pandas(frame, preserve_index=False)
        assert back.schema.equals(SCHEMAS[name], check_metadata=False), name
    assert frames["submissions"]["words"].isna().tolist() == [False, True, True]


def test_latest_is_refreshed(tmp_path: Path) -> None:
    first = write_reports(tmp_path, "run1", sample_tables())
    assert pq.read_table(first.latest_dir / "submissions.parquet").num_rows == 3
    second = write_reports(tmp_path, "run2", ReportTables(submissions=[{"document_id": "z", "status": "completed"}]))
    latest = pq.read_table(second.latest_dir / "submissions.parquet").to_pylist()
    assert [r["document_id"] for r in latest] == ["z"]
    # The first run's folder is untouched; no temporary folders remain.
    assert pq.read_table(first.submissions).num_rows == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "run1", "run2"]
    assert sorted(p.name for p in second.latest_dir.iterdir()) == sorted(f"{n}.parquet" for n in SCHEMAS)
    # Rewriting the same label replaces its files (collect_results does that).
    write_reports(tmp_path, "run2", ReportTables())
    assert pq.read_table(second.submissions).num_rows == 0


def test_the_reports_start_from_the_memory_the_run_freed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's reports hold its peak: the heap's free pages (what the run's reading freed on its
    own threads) go back to the system before they are built, not only before the catalog."""
    from doccheck.outputs import _parquet_reports as reports

    order: list[str] = []
    monkeypatch.setattr(reports, "return_freed_memory", lambda: order.append("returned") or True)
    monkeypatch.setattr(
        reports, "start_run_folder", lambda *a, _real=reports.start_run_folder: order.append("built") or _real(*a)
    )
    write_reports(tmp_path, "run1", sample_tables())
    assert order == ["returned", "built"]


def test_metadata_join(tmp_path: Path) -> None:
    metadata = {"a": {"document_id": "a", "section": "S1", "cohort": "2026"}, "b": {"section": "S2"}}
    paths = write_reports(tmp_path, "run", sample_tables(), metadata)
    subs = pq.read_table(paths.submissions)
    assert subs.schema.names[-2:] == ["meta_section", "meta_cohort"]
    assert subs.column("meta_section").to_pylist() == ["S1", "S2", None]
    assert subs.column("meta_cohort").to_pylist() == ["2026", None, None]
    sources = pq.read_table(paths.similarity_sources)
    assert sources.column("meta_section").to_pylist() == ["S1"]
    empty = to_dataframes(ReportTables(), metadata)["ai_results"]
    assert list(empty.columns)[-2:] == ["meta_section", "meta_cohort"] and len(empty) == 0


def test_bad_values_name_table_row_and_column(tmp_path: Path) -> None:
    bad = ReportTables(ai_results=[{"document_id": "a", "score": "high"}])
    with pytest.raises(ReportError, match=r"ai_results row 0 \(document_id 'a'\), column 'score'"):
        write_reports(tmp_path, "r", bad)
    with pytest.raises(ReportError, match="completed_at"):
        write_reports(tmp_path, "r", ReportTables(ai_results=[{"completed_at": "yesterday"}]))
    assert write_reports(tmp_path, "_c-20261122T100000Z-abcd1234", ReportTables()).run_dir.is_dir()
    for label in ("latest", "../x", "", ".hidden", "a/b", "-x", "x" * 201):
        with pytest.raises(ReportError, match="run label"):
            write_reports(tmp_path, label, ReportTables())


def test_rejected_rows_are_normalised() -> None:
    rows = [{"document_id": "r", "status": "rejected", "mode": None, "error_code": "missing_id"}]
    table = to_dataframes(ReportTables(submissions=rows))["submissions"]
    assert table["mode"].tolist() == ["rejected"] and table["cost_cents"].tolist() == [0]


def test_nan_from_pandas_is_null(tmp_path: Path) -> None:
    frame = pd.DataFrame({"document_id": ["a"], "score": [float("nan")], "words": [float("nan")]})
    tables = ReportTables(ai_results=frame.to_dict(orient="records"))
    paths = write_reports(tmp_path, "r", tables)
    row = pq.read_table(paths.ai_results).to_pylist()[0]
    assert row["score"] is None and row["words"] is None


def test_concurrent_writers_leave_one_complete_latest(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def write(i: int) -> None:
        write_reports(tmp_path, f"run{i}", ReportTables(submissions=[{"document_id": f"d{i}"}]))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(16)))
    latest = tmp_path / "latest"
    assert sorted(p.name for p in latest.iterdir()) == sorted(f"{n}.parquet" for n in SCHEMAS)
    (row,) = pq.read_table(latest / "submissions.parquet").to_pylist()
    assert row["document_id"] in {f"d{i}" for i in range(16)}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["latest", *(f"run{i}" for i in range(16))])


def test_a_column_of_native_values_is_built_as_each_value_would_be_coerced() -> None:
    """The one-call Arrow path (issue 28: the reports of a term) gives the same column as the
    per-value coercion, and values it cannot take exactly (a bool among ints, 2.5 for an int,
    an ISO string) still go through the coercion and its error messages."""
    from doccheck.outputs._parquet_reports import _build_table, _coerce

    schema = pa.schema([("n", pa.int64()), ("x", pa.float64()), ("s", pa.string()), ("b", pa.bool_()),
                        ("t", pa.timestamp("us", tz="UTC"))])  # fmt: skip
    rows = [
        {"n": 3, "x": float("nan"), "s": "é", "b": True, "t": datetime(2026, 1, 1, 12)},
        {"n": None, "x": 2, "s": None, "b": None, "t": datetime(2026, 1, 1, 13, tzinfo=timezone(timedelta(hours=1)))},
    ]
    slow = pa.Table.from_arrays(
        [pa.array([_coerce(r.get(f.name), f.type) for r in rows], type=f.type) for f in schema], schema=schema
    )
    assert _build_table("t", schema, rows).equals(slow)
    iso = [{**rows[0], "t": "2026-01-01T12:00:00"}]
    assert _build_table("t", schema, iso).column("t").to_pylist() == [datetime(2026, 1, 1, 12, tzinfo=UTC)]
    with pytest.raises(ReportError, match="column 'n'.*boolean"):
        _build_table("t", schema, [{"n": True}])
    with pytest.raises(ReportError, match="column 'n'.*whole number"):
        _build_table("t", schema, [{"n": 2.5}])
