"""Invariant 11 on one ledger (issue 39): a delivery never moves a final result backwards,
another spelling of a product is never a product of its own, and a failure keeps the
service's words, whatever shape ``error`` had."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from doccheck.client import Check
from doccheck.ledger import Ledger
from doccheck.ledger._money import total_money
from doccheck.ledger._tables import ContradictionRow
from tests.factories import check_json, planned, record
from tests.fixtures.events import event_body
from tests.unit.ledger.test_ledger import submit

FULL_AI = {"status": "completed", "score": 0.91, "label": "ai"}


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    yield led
    led.close()


def _money(ledger: Ledger, check_id: str) -> tuple[int, int]:
    with ledger.engine.connect() as conn:
        m = total_money(conn, [check_id])
    return m.charged_cents, m.refunded_cents


def _poll(ledger: Ledger, check_id: str, **over: object) -> None:
    ledger.record_check(Check.model_validate(check_json(check_id, ("ai",), **over)), source="poll")


def test_a_late_failed_delivery_never_flips_a_billed_result(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d1"), "chk-1")
    record(ledger, event_body("evt-ok", "chk-1", "ai"))
    ledger.apply_pending_events()
    _poll(ledger, "chk-1", status="completed", ai=FULL_AI)
    # the first attempt's check.failed, retried by the sender, arrives after the completion
    record(ledger, event_body("evt-late", "chk-1", "ai", "check.failed", error={"code": "engine", "message": "x"}))
    ledger.apply_pending_events()
    [o] = ledger.pending_outcomes(run_id=run_id)  # contradicted: fetched again, status kept
    assert (o.status, o.fetched, o.score) == ("completed", False, 0.91)
    assert _money(ledger, "chk-1") == (1, 0)  # no refund the service never made
    _poll(ledger, "chk-1", status="completed", ai=FULL_AI)  # what the service says now settles it
    rows = ledger.report_rows(run_id=run_id)
    ai = rows["ai_results"][0]
    assert (ai["status"], ai["score"]) == ("completed", 0.91)
    assert ai["contradiction"] == "a delivery said failed after completed; the service says completed"
    summary = ledger.run_summary(run_id)
    assert summary["contradictions"] == [
        {"document_id": "d1", "product": "ai", "held": "completed", "delivered": "failed", "settled": "completed"}
    ]
    assert summary["products"] == {"ai": {"completed": 1}}
    assert _money(ledger, "chk-1") == (1, 0)


def test_a_failure_then_the_retry_that_completed_is_settled_by_the_service(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d1"), "chk-1")
    record(ledger, event_body("evt-f", "chk-1", "ai", "check.failed", error={"code": "engine", "message": "x"}))
    record(ledger, event_body("evt-ok", "chk-1", "ai"))
    ledger.apply_pending_events()
    [o] = ledger.pending_outcomes(run_id=run_id)
    assert (o.status, o.fetched) == ("failed", False)  # kept until the service is asked
    assert ledger.outcome_counts(run_id=run_id)["pending"] == 1  # a wait does not end on it
    _poll(ledger, "chk-1", status="completed", ai=FULL_AI)
    assert ledger.pending_outcomes(run_id=run_id) == []
    ai = ledger.report_rows(run_id=run_id)["ai_results"][0]
    assert (ai["status"], ai["score"], ai["error_code"]) == ("completed", 0.91, None)
    assert _money(ledger, "chk-1") == (1, 0)  # money follows the service: nothing refunded


@pytest.mark.parametrize("spelling", ["AI", "ai_detection", "Ai-Detection"])
def test_other_spellings_of_a_product_are_that_product(ledger: Ledger, spelling: str) -> None:
    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d1"), "chk-1")
    record(ledger, event_body("evt-1", "chk-1", spelling))
    ledger.apply_pending_events()
    [o] = ledger.pending_outcomes(run_id=run_id)
    assert (o.product, o.status, o.fetched) == ("ai", "completed", False)
    assert [e.product for e in ledger.events()] == [spelling]  # stored as sent


def test_an_unknown_product_is_no_result_row_and_asks_for_the_check(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d1"), "chk-1")
    with caplog.at_level(logging.WARNING, logger="doccheck.client"):
        record(ledger, event_body("evt-1", "chk-1", "grammar_probe"))
        record(ledger, event_body("evt-2", "chk-1", "grammar_probe"))
        ledger.apply_pending_events()
    assert sum("'grammar_probe'" in r.getMessage() for r in caplog.records) == 1  # warned once, by name
    [pc] = ledger.pending_checks(run_id=run_id)
    assert pc.awaiting_fetch  # fetched now, not after the grace period
    assert [o.product for o in ledger.pending_outcomes(run_id=run_id)] == ["ai"]
    assert ledger.run_summary(run_id)["products"] == {"ai": {"pending": 1}}
    _poll(ledger, "chk-1", status="completed", ai=FULL_AI)
    assert ledger.pending_checks(run_id=run_id) == []


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        ("the engine ran out of time", None, "the engine ran out of time"),
        ({"code": "engine_timeout", "message": "took too long"}, "engine_timeout", "took too long"),
        (
            {"type": "https://errors.example/engine-timeout", "title": "Timeout", "detail": "took 600 s"},
            "engine-timeout",
            "took 600 s",
        ),
    ],
)
def test_the_services_words_for_a_failure_reach_the_reports(
    ledger: Ledger, error: object, code: str | None, message: str
) -> None:
    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d1"), "chk-1")
    record(ledger, event_body("evt-f", "chk-1", "ai", "check.failed", error=error))  # type: ignore[arg-type]
    ledger.apply_pending_events()
    ai = ledger.report_rows(run_id=run_id)["ai_results"][0]
    assert (ai["status"], ai["error_code"], ai["error_message"]) == ("failed", code, message)
    [failure] = ledger.run_summary(run_id)["product_failures"]
    assert (failure["error_code"], failure["error_message"]) == (code, message)


def test_a_contradiction_has_its_own_row_per_delivery(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d1"), "chk-1")
    _poll(ledger, "chk-1", status="completed", ai=FULL_AI)
    for i in range(3):  # the late failure delivered three times with fresh ids
        record(ledger, event_body(f"evt-{i}", "chk-1", "ai", "check.failed"))
    ledger.apply_pending_events()
    with ledger.session() as s:
        rows = s.query(ContradictionRow).all()
    assert [(r.held_status, r.delivered_status) for r in rows] == [("completed", "failed")] * 3
    assert {c["settled"] for c in ledger.run_summary(run_id)["contradictions"]} == {None}  # not fetched yet


def test_a_copy_of_the_first_delivery_never_settles_a_contradiction(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    submit(ledger, run_id, planned("d1"), "chk-1")
    record(ledger, event_body("evt-f", "chk-1", "ai", "check.failed"))
    record(ledger, event_body("evt-ok", "chk-1", "ai"))  # the retry completed: contradiction
    record(ledger, event_body("evt-f2", "chk-1", "ai", "check.failed"))  # the failure again, a fresh id
    ledger.apply_pending_events()
    [o] = ledger.pending_outcomes(run_id=run_id)
    assert (o.status, o.fetched) == ("failed", False)  # still waiting for the service's word
    _poll(ledger, "chk-1", status="completed", ai=FULL_AI)
    assert ledger.report_rows(run_id=run_id)["ai_results"][0]["status"] == "completed"
