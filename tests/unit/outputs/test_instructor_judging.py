"""The report's AI rules in the instructor's files: length gate, bands, expected false flags (issue 25)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from doccheck.outputs._calibration import AiRules, BandBounds, exact_interval
from doccheck.outputs._parquet_reports import ReportTables, write_reports
from doccheck.outputs.instructor import build_documents, is_flagged, render_report, write_instructor_files
from doccheck.outputs.instructor._page import base_rate_text


def _doc(doc: str, words: int, score: float | None, label: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    sub = {"document_id": doc, "row_number": 1, "mode": "text", "check_id": f"chk_{doc}", "products": ["ai"],
           "status": "submitted", "words": words, "cost_cents": 1}  # fmt: skip
    ai = {"document_id": doc, "check_id": f"chk_{doc}", "status": "completed", "score": score, "label": label,
          "words": words}  # fmt: skip
    return sub, ai


def judging_tables() -> ReportTables:
    docs = [
        _doc("short_ai", 120, 0.99, "ai"),  # too short: never AI-flagged, whatever the score or label
        _doc("low", 400, 0.20, "human"),
        _doc("elevated", 400, 0.60, "mixed"),
        _doc("high", 900, 0.95, "ai"),
    ]
    return ReportTables(submissions=[s for s, _ in docs], ai_results=[a for _, a in docs])


def _rows(rules: AiRules | None = None) -> dict[str, dict[str, Any]]:
    from doccheck.outputs._parquet_reports import to_tables

    tables = {name: t.to_pylist() for name, t in to_tables(judging_tables()).items()}
    return {r["document_id"]: r for r in build_documents(tables, rules=rules)}


def test_a_short_document_is_never_ai_flagged() -> None:
    rows = _rows()
    short = rows["short_ai"]
    assert short["ai_band"] == "too_short" and short["flagged"] is False
    assert short["ai_words"] == 120 and short["ai_note"] == "too short to judge (120 words < 300)"
    assert short["ai_score"] == 0.99  # the raw score stays for data teams
    # the same row with a lower gate is judged, and flagged
    assert is_flagged(short, AiRules(BandBounds(min_words=100))) is False  # its band says too_short
    lowered = _rows(AiRules(BandBounds(min_words=100)))
    assert lowered["short_ai"]["ai_band"] == "high" and lowered["short_ai"]["flagged"] is True


def test_bands_and_flags_follow_the_bounds() -> None:
    rows = _rows()
    assert {d: r["ai_band"] for d, r in rows.items()} == {
        "short_ai": "too_short", "low": "low", "elevated": "elevated", "high": "high"}  # fmt: skip
    assert [d for d, r in rows.items() if r["flagged"]] == ["elevated", "high"]
    strict = _rows(AiRules(BandBounds(elevated=0.7, high=0.9), threshold=0.7))
    assert strict["elevated"]["ai_band"] == "low"
    assert strict["elevated"]["flagged"] is True  # label "mixed" still flags a judged document


def test_files_carry_the_band_and_the_page_shows_bands_not_scores(tmp_path: Path) -> None:
    paths = write_reports(tmp_path, "run-1", judging_tables())
    written = write_instructor_files(paths.run_dir, paths.latest_dir, campaign="course", run_id="r1")
    table = {r["document_id"]: r for r in pq.read_table(written.documents_parquet).to_pylist()}
    assert table["short_ai"]["ai_band"] == "too_short" and table["short_ai"]["ai_score"] == 0.99
    csv_rows = {r["document_id"]: r for r in csv.DictReader(io.StringIO(written.documents_csv.read_text("utf-8-sig")))}
    assert csv_rows["high"]["ai_band"] == "high" and "too short to judge" in csv_rows["short_ai"]["ai_note"]
    page = written.report_html.read_text()
    assert ">too short to judge<" in page and ">elevated<" in page and "0.99" not in page
    assert "under 300 words" in page and "from 0.5" in page and "from 0.8" in page
    assert "The rate of false AI flags is unknown" in page  # no reference: nothing invented
    cal = json.loads((paths.run_dir / "calibration.json").read_text())
    assert cal["reference_campaign"] is None and cal["false_flag_rate"] is None
    assert cal["judged_documents"] == 3 and cal["threshold"] == 0.5
    assert (paths.latest_dir / "calibration.json").read_text() == (paths.run_dir / "calibration.json").read_text()


def test_reference_scores_give_the_expected_false_flags(tmp_path: Path) -> None:
    paths = write_reports(tmp_path, "run-1", judging_tables())
    reference = [0.9, 0.6, 0.55] + [0.1] * 409  # 3 of 412 known-human documents at or above 0.5
    rules = AiRules(reference_campaign="essays-2019")
    written = write_instructor_files(paths.run_dir, None, campaign="course", rules=rules, reference_scores=reference)
    cal = json.loads((paths.run_dir / "calibration.json").read_text())
    low, high = exact_interval(3, 412)
    assert cal["reference_documents"] == 412 and cal["reference_flagged"] == 3
    assert cal["false_flag_rate"] == pytest.approx(3 / 412)
    assert (cal["false_flag_rate_low"], cal["false_flag_rate_high"]) == pytest.approx((low, high))
    assert cal["expected_false_flags_low"] == pytest.approx(3 * low)
    assert cal["expected_false_flags_high"] == pytest.approx(3 * high)
    page = written.report_html.read_text()
    assert "3 of 412 known-human documents" in page and "this run has 2 AI flags" in page
    assert "Of this run&#39;s 3 judged documents, expect about 0 (0 to 0)" in page


def test_max_false_flag_rate_picks_the_threshold_from_the_reference(tmp_path: Path) -> None:
    paths = write_reports(tmp_path, "run-1", judging_tables())
    reference = [0.1] * 90 + [0.7] * 10  # at 0.5: 10 % flagged; above 0.7: none
    rules = AiRules(reference_campaign="ref", max_false_flag_rate=0.05)
    written = write_instructor_files(paths.run_dir, None, campaign="c", rules=rules, reference_scores=reference)
    cal = json.loads((paths.run_dir / "calibration.json").read_text())
    assert cal["threshold"] > 0.7 and cal["reference_flagged"] == 0
    flagged = {r["document_id"] for r in pq.read_table(written.documents_parquet).to_pylist() if r["flagged"]}
    assert flagged == {"elevated", "high"}  # both still flagged by their label, not by a score of 0.6


def test_base_rate_sentence_without_and_with_reference() -> None:
    assert "unknown" in base_rate_text(None, 4) and "4 AI flags" in base_rate_text(None, 4)
    from doccheck.outputs._calibration import calibrate

    text = base_rate_text(calibrate("ref", [0.9] * 10 + [0.1] * 90, 0.5, 200), 30)
    assert "10 of 100 known-human documents" in text and "10.0 %" in text
    assert "expect about 20" in text and "this run has 30 AI flags" in text


def test_render_report_states_the_gate_for_given_rules() -> None:
    rows = list(_rows(AiRules(BandBounds(min_words=50))).values())
    page = render_report(rows, campaign="c", rules=AiRules(BandBounds(min_words=50)))
    assert "under 50 words" in page


def test_reference_scores_are_read_from_the_ledger(tmp_path: Path) -> None:
    from doccheck.ledger import Ledger, OutcomeRow, SubmissionRow

    ledger = Ledger(f"sqlite:///{tmp_path / 'ref.db'}")
    with ledger.session() as s:
        for i, (words, score, status) in enumerate(
            [
                (500, 0.9, "completed"),
                (500, 0.2, "completed"),
                (100, 0.95, "completed"),
                (500, None, "processing"),
                (None, 0.4, "completed"),
            ]  # fmt: skip
        ):
            s.add(SubmissionRow(campaign="ref", document_id=f"d{i}", idempotency_key=f"k{i}", state="submitted",
                                check_id=f"c{i}", words=words))  # fmt: skip
            s.add(OutcomeRow(check_id=f"c{i}", product="ai", campaign="ref", status=status, score=score))
            s.add(OutcomeRow(check_id=f"c{i}", product="similarity", campaign="ref", status="completed", score=50.0))
        s.add(SubmissionRow(campaign="other", document_id="x", idempotency_key="kx", state="submitted", check_id="cx"))
        s.add(OutcomeRow(check_id="cx", product="ai", campaign="other", status="completed", score=0.99))
        s.commit()
    assert sorted(ledger.ai_scores("ref", min_words=300)) == [0.2, 0.4, 0.9]  # the short one is gated out
    assert sorted(ledger.ai_scores("ref")) == [0.2, 0.4, 0.9, 0.95]
    assert ledger.ai_scores("nobody") == []


def test_write_run_outputs_takes_the_rules_as_option_values(tmp_path: Path) -> None:
    import asyncio

    from doccheck.outputs.instructor._run_outputs import write_run_outputs

    class _Ledger:
        def ai_scores(self, campaign: str, *, min_words: int = 0) -> list[float]:
            assert (campaign, min_words) == ("ref", 100)
            return [0.9] + [0.1] * 9

    paths = write_reports(tmp_path, "run-1", judging_tables())
    rules = {"min_ai_words": 100, "ai_band_elevated": 0.5, "ai_band_high": 0.8, "reference_campaign": "ref",
             "max_false_flag_rate": None}  # fmt: skip
    asyncio.run(write_run_outputs(paths.run_dir, None, campaign="c", ledger=_Ledger(), rules=rules))
    cal = json.loads((paths.run_dir / "calibration.json").read_text())
    assert cal["reference_campaign"] == "ref" and cal["reference_flagged"] == 1 and cal["judged_documents"] == 4


def test_an_empty_reference_campaign_is_named_and_the_rate_stays_unknown(tmp_path: Path) -> None:
    paths = write_reports(tmp_path, "run-1", judging_tables())
    rules = AiRules(reference_campaign="nothing-here", max_false_flag_rate=0.01)
    written = write_instructor_files(paths.run_dir, None, campaign="c", rules=rules, reference_scores=[])
    page = written.report_html.read_text()
    assert "the reference campaign &#39;nothing-here&#39; has no completed AI scores" in page
    cal = json.loads((paths.run_dir / "calibration.json").read_text())
    assert cal["reference_campaign"] == "nothing-here" and cal["false_flag_rate"] is None and cal["threshold"] == 0.5
