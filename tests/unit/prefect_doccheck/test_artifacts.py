"""The UI artifacts' content, built as plain data from report rows (no Prefect server)."""

from __future__ import annotations

import re

import pyarrow.parquet as pq
import pytest
from markdown_it import MarkdownIt

from doccheck.outputs import ReportTables, escape_markdown, write_reports
from doccheck.pipeline import Progress
from prefect_doccheck.tasks._artifacts import (
    RunProgress,
    artifact_key,
    outcome_rows,
    png_data_url,
    read_report_rows,
    score_histogram_png,
    summary_markdown,
    top_scores,
)

TABLES = {
    "submissions": [
        {"document_id": "d1", "row_number": 1, "check_id": "chk_1", "status": "submitted", "words": 250, "cost_cents": 9},
        {"document_id": "d2", "row_number": 2, "check_id": "chk_2", "status": "submitted", "words": 80, "cost_cents": 1},
        {"document_id": "d3", "row_number": 3, "status": "rejected", "error_code": "empty_text",
         "error_message": "row 3: field text: the text is empty", "cost_cents": 0},
        {"document_id": "d4", "row_number": 4, "status": "skipped_budget", "error_code": "budget",
         "error_message": "over | budget", "cost_cents": 0},
    ],
    "ai_results": [
        {"document_id": "d1", "check_id": "chk_1", "status": "completed", "score": 0.91, "label": "ai"},
        {"document_id": "d2", "check_id": "chk_2", "status": "completed", "score": 0.12, "label": "human"},
    ],
    "similarity_results": [
        {"document_id": "d1", "check_id": "chk_1", "status": "failed", "score": None, "error_code": "processing_failed"},
    ],
    "similarity_sources": [],
}  # fmt: skip


def test_artifact_keys_are_lowercase_dashes_and_stable() -> None:
    assert artifact_key("History 101 / A3") == "bulk-check-history-101-a3"
    assert artifact_key("History 101 / A3", "scores") == "bulk-check-history-101-a3-scores"
    assert artifact_key("...", "progress") == "bulk-check-run-progress"
    assert artifact_key("X", None, "collect-results") == "collect-results-x"
    long = artifact_key("a" * 300, "outcomes")
    assert len(long) <= 100 and long.endswith("-outcomes")
    for key in (long, artifact_key("Ünïcode_名前 2026", "progress")):
        assert re.fullmatch(r"[a-z0-9-]+", key), key


def test_outcome_rows_count_per_product_and_price_non_failed_products() -> None:
    rows = {r["product"]: r for r in outcome_rows(TABLES)}
    assert rows["ai"] == {
        "product": "ai",
        "requested": 2,
        "completed": 2,
        "failed": 0,
        "pending": 0,
        "cost_cents": 3 + 1,
    }
    # the failed similarity product is refunded: no cost
    assert rows["similarity"] == {
        "product": "similarity", "requested": 1, "completed": 0, "failed": 1, "pending": 0, "cost_cents": 0,
    }  # fmt: skip
    assert rows["total"]["requested"] == 3 and rows["total"]["cost_cents"] == 10  # what was charged
    empty = outcome_rows({})
    assert [r["requested"] for r in empty] == [0, 0, 0]


def test_top_scores_highest_first() -> None:
    top = top_scores(TABLES, "ai")
    assert [t["document_id"] for t in top] == ["d1", "d2"]
    assert top[0] == {"document_id": "d1", "check_id": "chk_1", "score": 0.91, "label": "ai"}
    assert top_scores(TABLES, "similarity") == []
    assert len(top_scores({"ai_results": [{"score": i / 10} for i in range(10)]}, "ai", n=3)) == 3


def test_summary_markdown_has_rejects_spend_scores_and_paths() -> None:
    summary = {"campaign": "hist-101", "status": "finished", "run_id": "r1", "documents": 2, "rejected": 1,
               "spent_cents": 10, "report_dir": "/tmp/reports/hist-101-x", "latest_dir": "/tmp/reports/latest"}  # fmt: skip
    md = summary_markdown(
        summary, TABLES, {"ai_results": "/tmp/reports/hist-101-x/ai_results.parquet"}, "/x/scores.png"
    )
    text = rendered_text(md)
    assert text.startswith("doccheck run: hist-101")
    assert "| charged this run (cents) | 10 |" in md
    assert "## Rejected rows (1)" in md and "row 3: field text: the text is empty" in text
    assert "## Not submitted (1)" in md and "over \\| budget" in md  # a pipe cannot break the table
    assert "| d1 | chk\\_1 | 0.91 | ai |" in md
    assert "/tmp/reports/hist-101-x/ai_results.parquet" in text and "/x/scores.png" in text
    assert "## Highest similarity scores (top 5)" in md and "_none_" in md


def test_summary_markdown_falls_back_to_summary_rejections() -> None:
    md = summary_markdown(
        {"campaign": "c", "rejections": [{"row": 7, "document_id": "z", "code": "bad", "reason": "row 7: no text"}]},
        {},
    )
    assert "## Rejected rows (1)" in md and "row 7: no text" in rendered_text(md)


def test_histogram_is_a_png_even_without_scores() -> None:
    png = score_histogram_png([0.1, 0.5, 0.9, None], [12.5, 80.0])
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 2000
    empty = score_histogram_png([], [])
    assert empty.startswith(b"\x89PNG")
    url = png_data_url(empty)
    assert url.startswith("data:image/png;base64,iVBOR")


def test_read_report_rows_reads_written_reports(tmp_path) -> None:  # type: ignore[no-untyped-def]
    paths = write_reports(tmp_path, "run-1", ReportTables(**TABLES))
    rows = read_report_rows(paths.run_dir)
    assert [r["document_id"] for r in rows["ai_results"]] == ["d1", "d2"]
    assert pq.read_table(paths.ai_results).num_rows == 2
    assert read_report_rows(tmp_path / "missing") == {
        "submissions": [], "ai_results": [], "similarity_results": [], "similarity_sources": [], "cohort_matches": [],
    }  # fmt: skip


def test_run_progress_combines_submission_and_results() -> None:
    p = RunProgress("k", documents=10, products=20, wait=True)
    assert p.percent() == 0.0
    p.listener(Progress(done=5, total=10, phase="submit"))
    assert p.percent() == 25.0
    p.listener(Progress(done=10, total=10, phase="submit"))
    p.listener(Progress(done=10, total=10, phase="wait"))
    assert p.percent() == 75.0
    assert p.description() == "submitted 10/10 documents; results 10/20 products"
    p.mark_results(99)
    assert p.percent() == 100.0
    no_wait = RunProgress("k", documents=4, products=8, wait=False)
    no_wait.listener(Progress(done=1, total=4, phase="submit"))
    assert no_wait.percent() == 25.0 and "results" not in no_wait.description()
    assert RunProgress("k", 0, 0, wait=True).percent() == 100.0


def rendered_text(md: str) -> str:
    """The text a reader sees: markdown rendered (CommonMark + tables, HTML passed through,
    as Prefect's UI does), tags stripped, entities decoded."""
    import html
    import re

    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


HOSTILE_IDS = [
    "![x](http://host/)",
    "<img src=x onerror=alert(1)>",
    "[a](javascript:alert(1))",
    "<a href='http://e'>x</a>",
    "**bold** _it_ `code` ~~s~~",
    "# heading",
    "a|b\nc",
    "&lt;img&gt; &amp;",
    "http://evil.example/x www.evil.example",
    "[ref]: http://e",
    "\\![x](y)",
]


def test_hostile_ids_render_as_their_own_text() -> None:
    rows = [{"document_id": v, "check_id": "c", "score": 0.5, "label": "ai"} for v in HOSTILE_IDS]
    md = summary_markdown({"campaign": "![c](http://host/c.png)", "report_dir": "/tmp/`x`<b>"}, {"ai_results": rows})
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "<img" not in rendered and "<a " not in rendered and "<b>" not in rendered
    assert rendered.count("<em>") == rendered.count("<em>none</em>")  # only our own "_none_"
    assert "<strong>" not in rendered and "<code>" not in rendered
    text = rendered_text(md)
    for value in HOSTILE_IDS[:5]:
        assert value in text, value
    assert "doccheck run: ![c](http://host/c.png)" in text and "/tmp/`x`<b>" in text


@pytest.mark.parametrize("value", HOSTILE_IDS)
def test_escape_markdown_round_trips_through_a_renderer(value: str) -> None:
    rendered = MarkdownIt("commonmark", {"html": True}).render(escape_markdown(value))
    assert "<img" not in rendered and "<a " not in rendered
    assert rendered_text(escape_markdown(value)).strip() == value.replace("\n", " ")


def test_a_presigned_report_is_a_link_with_its_expiry_beside_it() -> None:
    from datetime import UTC, datetime

    from doccheck.storage import ShareLink

    url = "https://bucket.s3.example/reports/r/ai_results.parquet?X-Amz-Signature=ab_c&X-Amz-Expires=60"
    link = ShareLink(url, datetime(2031, 5, 4, 6, 0, tzinfo=UTC))
    md = summary_markdown({"campaign": "c", "report_dir": "s3://bucket/reports/r"}, TABLES, {"ai_results": link},
                          ShareLink("s3://bucket/reports/r/scores.png"))  # fmt: skip
    assert f"- ai\\_results: [ai\\_results](<{url}>) (presigned link, valid until 2031-05-04 06:00 UTC)" in md
    # not presigned: the object's URL as text
    assert f"- score histogram: {escape_markdown('s3://bucket/reports/r/scores.png')}" in md
    (anchor,) = re.findall(r'href="([^"]+)"', MarkdownIt().render(md))
    assert anchor == url.replace("&", "&amp;")


def test_artifact_links_follow_the_setting(monkeypatch: pytest.MonkeyPatch, memory_store: object, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Local files are file:// URIs; a store that cannot sign (fsspec's memory) gets its object URL
    even when presigned links are asked for (s3's are tested against the S3 server)."""
    from prefect_doccheck.tasks._artifacts import artifact_link

    assert artifact_link(str(tmp_path / "r" / "report.html")).url == (tmp_path / "r" / "report.html").as_uri()
    assert artifact_link("memory://term/reports/r/report.html").url == "memory://term/reports/r/report.html"
    monkeypatch.setenv("DOCCHECK_ARTIFACT_LINKS", "presigned")
    link = artifact_link("memory://term/reports/r/report.html")
    assert link.url == "memory://term/reports/r/report.html" and not link.presigned and link.expiry_text() == ""
