"""Issue 41, "said plainly": each document's status in words, sent_as in the documents table and on
the report page, and the rows not checked counted by reason in the summaries (the dry run's too)."""

from __future__ import annotations

from typing import Any

from doccheck.outputs._parquet_reports import ReportTables, rejection_rows, to_tables
from doccheck.outputs._said import CHECKED, CHECKED_AS_TEXT, REASON_WORDS, count_by_reason, status_text
from doccheck.outputs.instructor import build_documents, render_report
from doccheck.pipeline import DryRunSummary, RunSummary
from doccheck.sources.manifest import Rejection

PHOTO = REASON_WORDS["image_without_text"]


def _tables() -> dict[str, list[dict[str, Any]]]:
    tables = ReportTables(
        submissions=[
            {"document_id": "odt", "row_number": 1, "mode": "text", "sent_as": "text", "check_id": "chk_1",
             "products": ["ai", "similarity"], "status": "submitted", "words": 400, "cost_cents": 8},
            {"document_id": "docx", "row_number": 2, "mode": "multipart", "sent_as": "original", "check_id": "chk_2",
             "products": ["ai", "similarity"], "status": "submitted", "words": 120, "cost_cents": 4},
            *rejection_rows([
                Rejection(3, "photo", "path", "image_without_text", f"row 3, field 'path': hw.jpg: {PHOTO}"),
                Rejection(4, "scan", "path", "image_only_pdf", "row 4, field 'path': scan.pdf: image-only PDF"),
                Rejection(5, "scan2", "path", "image_only_pdf", "row 5, field 'path': scan2.pdf: image-only PDF"),
            ]),
        ],
        ai_results=[
            {"document_id": "odt", "check_id": "chk_1", "status": "completed", "score": 0.2, "label": "human",
             "words": 400},
            {"document_id": "docx", "check_id": "chk_2", "status": "completed", "score": 0.3, "label": "human",
             "words": 120},
        ],
    )  # fmt: skip
    return {name: t.to_pylist() for name, t in to_tables(tables, {}).items()}


def test_each_document_says_its_status_in_words_and_how_it_was_sent() -> None:
    rows = {r["document_id"]: r for r in build_documents(_tables())}
    assert rows["odt"]["sent_as"] == "text" and rows["odt"]["status_text"] == CHECKED_AS_TEXT
    assert rows["docx"]["sent_as"] == "original"
    assert rows["docx"]["status_text"] == f"{CHECKED}; too few words for the AI check (similarity still runs)"
    assert rows["photo"]["status_text"] == f"not checked: {PHOTO}"
    assert rows["photo"]["sent_as"] is None and rows["photo"]["ai_score"] is None  # empty, never 0
    assert rows["scan"]["status_text"].startswith("not checked: image-only PDF")


def test_the_page_says_how_documents_were_sent_and_counts_the_rest_by_reason() -> None:
    html = render_report(build_documents(_tables()), campaign="course", run_id="r1", link_prefix="../")
    assert "checked as extracted text" in html
    assert 'id="not-checked-reasons"' in html
    assert f"<strong>2</strong> {REASON_WORDS['image_only_pdf']}" in html
    assert "<strong>1</strong> image without machine-readable text" in html


def test_status_words_for_the_other_states() -> None:
    assert status_text({"status": "failed", "error_code": "password_protected"}).startswith(
        "not checked: password-protected"
    )
    assert status_text({"status": "failed", "error_code": "x_y", "error_message": "the file went away"}) == (
        "not checked: the file went away"
    )
    assert status_text({"status": "skipped_budget"}) == "not checked: over the run's budget"
    assert status_text({"status": "submitted", "ai_band": "too_short", "products": "ai"}) == (
        f"{CHECKED}; too few words for the AI check"
    )


def test_summaries_count_what_is_not_checked_by_reason_before_anything_is_paid() -> None:
    rejections: list[dict[str, str | int | None]] = [
        {"row": 1, "document_id": "a", "field": "path", "code": "image_without_text", "reason": "row 1 ..."},
        {"row": 2, "document_id": "b", "field": "path", "code": "password_protected", "reason": "row 2 ..."},
        {"row": 3, "document_id": "c", "field": "path", "code": "password_protected", "reason": "row 3 ..."},
        {"row": 4, "document_id": "d", "field": "text", "code": "empty_text", "reason": "row 4 ..."},
    ]
    expected = {REASON_WORDS["password_protected"]: 2, PHOTO: 1, "empty text": 1}
    assert count_by_reason(rejections) == expected
    dry = DryRunSummary(campaign="c", manifest="m.csv", rejections=rejections, as_text=3)
    assert dry.model_dump()["not_checked"] == expected and dry.model_dump()["as_text"] == 3
    run = RunSummary(status="finished", campaign="c", rejections=rejections, as_text=1)
    assert run.model_dump()["not_checked"] == expected
    markdown = run.as_markdown()
    assert (
        "files sent as their text | 1" in markdown
        and "| not checked | 1\\: image without machine\\-readable text" in markdown
    )
    assert RunSummary.model_validate(run.model_dump()).not_checked == expected  # a stored summary reads back


def test_a_misnamed_file_is_said_with_what_it_was_read_as() -> None:
    from doccheck.outputs._said import misnamed_words

    assert misnamed_words("odt", "docx") == "read as OpenDocument text: the file is named .docx"
    assert misnamed_words(".rtf", None) == "read as Rich Text Format (RTF): the file's name has no type"
    row = {"status": "submitted", "sent_as": "original", "read_as": "odt", "named_as": "docx", "misnamed": True}
    assert status_text(row) == f"{CHECKED}; read as OpenDocument text: the file is named .docx"
    assert status_text({**row, "misnamed": False}) == CHECKED
    tables = _tables()
    tables["submissions"][1].update(read_as="odt", named_as="docx", misnamed=True)
    rows = {r["document_id"]: r for r in build_documents(tables)}
    assert (rows["docx"]["read_as"], rows["docx"]["misnamed"]) == ("odt", True)
    assert rows["docx"]["status_text"].endswith("; read as OpenDocument text: the file is named .docx")
    html = render_report(list(rows.values()), campaign="course", run_id="r1", link_prefix="../")
    assert "read as OpenDocument text: the file is named .docx" in html
    assert "files misnamed (read as what they are)" in html
    assert (
        RunSummary(status="finished", campaign="c", manifest="m", misnamed=1).as_markdown().count("files misnamed") == 1
    )
    assert DryRunSummary(campaign="c", manifest="m", misnamed=2).misnamed == 2
