"""The instructor's files: wide table, CSV (injection-safe), report.html (escaped, offline)."""

from __future__ import annotations

import csv
import html as html_module
import io
import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from doccheck.outputs._parquet_reports import ReportTables, rejection_rows, write_reports
from doccheck.outputs.instructor import (
    DOCUMENTS_SCHEMA,
    build_documents,
    documents_table,
    neutralise,
    render_report,
    write_instructor_files,
)
from doccheck.outputs.instructor._page import script_json
from doccheck.outputs.instructor._spreadsheet import CsvChunks, csv_text
from doccheck.sources.manifest import Rejection

EVIL = "<script>window.__pwned = 1</script>"


def sample_tables() -> ReportTables:
    return ReportTables(
        submissions=[
            {"document_id": "s1", "row_number": 1, "mode": "text", "check_id": "chk_1", "products": ["ai", "similarity"],
             "status": "submitted", "words": 300, "cost_cents": 9},
            {"document_id": "s2", "row_number": 2, "mode": "text", "check_id": "chk_2", "products": ["ai", "similarity"],
             "status": "submitted", "words": 300, "cost_cents": 9},
            {"document_id": "=HYPERLINK(\"http://x\")", "row_number": 3, "mode": "text", "check_id": "chk_3",
             "products": ["ai"], "status": "submitted", "words": 100, "cost_cents": 1},
            *rejection_rows([Rejection(4, "bad", "text", "empty_text", f"row 4, field 'text': empty {EVIL}")]),
        ],
        ai_results=[
            {"document_id": "s1", "check_id": "chk_1", "status": "completed", "score": 0.91, "label": "ai"},
            {"document_id": "s2", "check_id": "chk_2", "status": "completed", "score": 0.12, "label": "human"},
            {"document_id": "=HYPERLINK(\"http://x\")", "check_id": "chk_3", "status": "pending"},
        ],
        similarity_results=[
            {"document_id": "s1", "check_id": "chk_1", "status": "completed", "score": 5.0, "matched_words": 15},
            {"document_id": "s2", "check_id": "chk_2", "status": "completed", "score": 62.5, "matched_words": 180},
        ],
        similarity_sources=[
            {"document_id": "s2", "check_id": "chk_2", "source_id": "ref_1", "title": "Water cycle", "kind": "reference",
             "matched_words": 20, "percent": 6.0},
            {"document_id": "s2", "check_id": "chk_2", "source_id": "chk_1", "title": "earlier submission",
             "kind": "submission", "matched_words": 160, "percent": 55.0},
        ],
    )  # fmt: skip


METADATA = {"s1": {"student": EVIL, "section": "A"}, "s2": {"student": "Zoë", "section": "-1+1"}}


def rows_of(tables: ReportTables, metadata: dict[str, Any] | None = METADATA) -> dict[str, list[dict[str, Any]]]:
    from doccheck.outputs._parquet_reports import to_tables

    return {name: t.to_pylist() for name, t in to_tables(tables, metadata).items()}


def test_wide_table_one_row_per_document_with_top_source_and_cohort() -> None:
    rows = build_documents(
        rows_of(sample_tables()),
        names={"s1": "essay one.docx"},
        cohort_matches=[{"document_id": "s2", "matched_document_id": "s1", "kind": "submission", "score": 55.0}],
        files={"s1": {"pdf": "files/s1.pdf.pdf"}},
    )
    by_id = {r["document_id"]: r for r in rows}
    assert len(rows) == 4
    assert by_id["s1"]["name"] == "essay one.docx" and by_id["s1"]["file_pdf"] == "files/s1.pdf.pdf"
    assert by_id["s1"]["ai_label"] == "ai" and by_id["s1"]["flagged"] is True
    s2 = by_id["s2"]
    assert s2["top_source_kind"] == "submission" and s2["top_source_matched_document_id"] == "s1"
    assert s2["cohort_matched_document_ids"] == "s1" and by_id["s1"]["cohort_match_count"] == 1
    assert s2["meta_student"] == "Zoë" and s2["flagged"] is True
    assert by_id["bad"]["status"] == "rejected" and by_id["bad"]["cost_cents"] == 0
    table = documents_table(rows)
    assert table.schema.names[: len(DOCUMENTS_SCHEMA)] == DOCUMENTS_SCHEMA.names
    assert table.schema.names[len(DOCUMENTS_SCHEMA) :] == ["meta_student", "meta_section"]
    assert documents_table([]).schema == DOCUMENTS_SCHEMA  # an empty run keeps its columns


@pytest.mark.parametrize("text", ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx"])
def test_formula_cells_are_neutralised(text: str) -> None:
    assert neutralise(text) == "'" + text
    assert neutralise("plain =text") == "plain =text"


def test_csv_opens_as_text_cells_and_keeps_numbers() -> None:
    rows = build_documents(rows_of(sample_tables()))
    table = documents_table(rows)
    text = csv_text(table.column_names, table.to_pylist())
    assert "\r\n" in text
    parsed = list(csv.DictReader(io.StringIO(text)))
    doc3 = next(r for r in parsed if r["row_number"] == "3")
    assert doc3["document_id"] == '\'=HYPERLINK("http://x")'
    s2 = next(r for r in parsed if r["document_id"] == "s2")
    assert s2["meta_section"] == "'-1+1" and s2["similarity_score"] == "62.5" and s2["flagged"] == "true"
    for record in parsed:
        for value in record.values():
            assert not value or value[0] not in "=+@\t\r" and not (value[0] == "-" and not _is_number(value))


def test_csv_of_a_table_is_the_csv_of_its_rows(tmp_path: Path) -> None:
    """``CsvChunks.write_table`` (cells made column by column by Arrow) writes the very bytes of
    the row writer, on the texts a spreadsheet would run, numbers, nulls and quotes."""
    texts = ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "plain =text", 'quo"te, comma', "line\nbreak",
             "é", "", None, "'=already"]  # fmt: skip
    table = pa.table({
        "text": pa.array(texts, pa.string()),
        "count": pa.array([-3, 0, None, 12, *range(9)], pa.int64()),
        "score": pa.array([0.5, float("nan"), None, 1.0, 1e-05, 62.5, *[0.1] * 7], pa.float64()),
        "flag": pa.array([True, False, None, *[True] * 10], pa.bool_()),
    })  # fmt: skip
    columns = [*table.column_names, "absent"]
    by_rows, by_table = tmp_path / "rows.csv", tmp_path / "table.csv"
    with CsvChunks(by_rows, columns) as out:
        out.write(table.to_pylist())
    with CsvChunks(by_table, columns) as out:
        out.write_table(table.slice(0, 5))
        out.write_table(table.slice(5))
    assert by_table.read_bytes() == by_rows.read_bytes()
    assert "'=1+1" in by_table.read_text(encoding="utf-8-sig")


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_page_escapes_untrusted_values_and_loads_nothing() -> None:
    rows = build_documents(rows_of(sample_tables()), files={"s1": {"similarity_pdf": "files/s1.similarity_pdf.pdf"}})
    html = render_report(rows, campaign=f"course {EVIL}", run_id="r1", link_prefix="../run-1/")
    assert "<script>window" not in html and "&lt;script&gt;window.__pwned" in html
    assert html.count("<script") == 3  # our two JSON blocks (summary, rows) and our script, nothing else
    rows_block = re.search(r'<script type="application/json" id="doccheck-rows">(.*?)</script>', html, re.S)
    assert rows_block and "<" not in rows_block.group(1)  # the rows' data cannot close its block
    assert EVIL in json.dumps(json.loads(rows_block.group(1)), ensure_ascii=False)  # as data, for textContent
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    policy = html_module.unescape(csp.group(1))
    assert "default-src 'none'" in policy and "unsafe" not in policy
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing remote
    assert 'href="../run-1/files/s1.similarity_pdf.pdf"' in html
    data = re.search(r'<script type="application/json" id="doccheck-data">(.*?)</script>', html, re.S)
    assert data and json.loads(data.group(1))["campaign"] == f"course {EVIL}"
    assert "indicator" in html and "not proof" in html


def test_script_json_cannot_close_its_block() -> None:
    text = str(script_json({"x": "</script><script>alert(1)</script>", "y": "a&b"}))
    assert "</" not in text and "<" not in text and json.loads(text)["x"].startswith("</script>")


def test_write_instructor_files_in_run_folder_and_latest(tmp_path: Path) -> None:
    paths = write_reports(tmp_path, "run-1", sample_tables(), metadata=METADATA)
    files = paths.run_dir / "files"
    files.mkdir()
    (files / "s1.pdf.pdf").write_bytes(b"%PDF-1.4 fake")
    written = write_instructor_files(paths.run_dir, paths.latest_dir, campaign="course", run_id="r1")
    table = pq.read_table(written.documents_parquet)
    assert table.num_rows == 4 and table.column("file_pdf").to_pylist()[0] == "files/s1.pdf.pdf"
    raw = written.documents_csv.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and "Zoë".encode() in raw
    assert 'href="files/s1.pdf.pdf"' in written.report_html.read_text()
    assert written.latest_report_html is not None
    assert 'href="../run-1/files/s1.pdf.pdf"' in written.latest_report_html.read_text()
    assert (paths.latest_dir / "documents.csv").read_bytes() == raw


def test_cohort_matches_file_is_optional_input(tmp_path: Path) -> None:
    import pyarrow as pa

    paths = write_reports(tmp_path, "run-1", sample_tables(), metadata=METADATA)
    first = write_instructor_files(paths.run_dir, None, campaign="course")
    assert "No two documents of the cohort matched." in first.report_html.read_text()  # matched, no pairs
    pq.write_table(
        pa.table({"document_id": ["s1"], "matched_document_id": ["s2"], "kind": ["near_duplicate"], "score": [0.8]}),
        paths.run_dir / "cohort_matches.parquet",
    )
    second = write_instructor_files(paths.run_dir, None, campaign="course")
    page = second.report_html.read_text()
    assert 'id="cohort-pairs"' in page and "near_duplicate" in page
    table = pq.read_table(second.documents_parquet).to_pylist()
    by_id = {r["document_id"]: r for r in table}
    assert by_id["s1"]["cohort_matched_document_ids"] == "s2" and by_id["s2"]["cohort_match_count"] == 1
