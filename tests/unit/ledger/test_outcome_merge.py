"""The pure merge rules of outcomes (doccheck.ledger._merge), without a database.

An ``OutcomeRow`` is a plain object until it is added to a session, so the rules are
exercised on rows built in memory.
"""

from __future__ import annotations

from datetime import UTC, datetime

from doccheck import domain
from doccheck.ledger._merge import PRODUCTS, event_product_data, merge_product, product_fields
from doccheck.ledger._tables import OutcomeRow

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FULL_AI = {"status": "completed", "score": 0.91, "label": "likely_ai"}


def _merge(row: OutcomeRow, product: str, data: dict, source: str = "poll") -> None:
    merge_product(row, product_fields(product, data), source=source, raw=data, completed_at=T0)


def test_a_full_poll_result_is_final_and_fetched() -> None:
    row = OutcomeRow(check_id="chk_1", product="ai")
    _merge(row, "ai", FULL_AI)
    assert (row.status, row.fetched, row.score, row.label, row.source) == ("completed", True, 0.91, "likely_ai", "poll")
    assert row.completed_at == T0


def test_a_bare_event_is_final_but_not_fetched_so_the_check_is_fetched_once() -> None:
    row = OutcomeRow(check_id="chk_1", product="ai")
    pdata = event_product_data("check.completed", {"check": {"id": "chk_1"}}, "ai")
    assert pdata == {"status": "completed"}
    _merge(row, "ai", pdata, source="webhook")
    assert (row.status, row.fetched, row.source) == ("completed", False, "webhook")
    _merge(row, "ai", FULL_AI)  # the GET after the event brings the scores
    assert (row.fetched, row.score) == (True, 0.91)
    assert row.source == "webhook"  # how the final status was first learnt is kept


def test_a_final_status_never_goes_back_to_processing() -> None:
    row = OutcomeRow(check_id="chk_1", product="ai")
    _merge(row, "ai", FULL_AI)
    _merge(row, "ai", {"status": "processing"})  # a late, stale poll answer
    assert (row.status, row.fetched, row.score) == ("completed", True, 0.91)


def test_a_bare_event_after_the_full_result_adds_nothing() -> None:
    row = OutcomeRow(check_id="chk_1", product="ai")
    _merge(row, "ai", FULL_AI)
    _merge(row, "ai", {"status": "completed"}, source="webhook")
    assert (row.fetched, row.score, row.label, row.source) == (True, 0.91, "likely_ai", "poll")


def test_a_failed_event_carries_the_error_and_is_final() -> None:
    payload = {"check": {"id": "chk_1", "similarity": {}}, "error": {"code": "engine_error", "message": "boom"}}
    pdata = event_product_data("check.failed", payload, "similarity")
    assert pdata is not None
    row = OutcomeRow(check_id="chk_1", product="similarity")
    _merge(row, "similarity", pdata, source="webhook")
    assert (row.status, row.fetched, row.error_code, row.error_message) == ("failed", True, "engine_error", "boom")


def test_similarity_is_fetched_only_with_score_and_sources() -> None:
    fields = product_fields("similarity", {"status": "completed", "score": 0.2})
    assert fields["fetched"] is False
    fields = product_fields("similarity", {"status": "completed", "score": 0.2, "sources": [{"url": "u"}]})
    assert (fields["fetched"], fields["source_count"]) == (True, 1)


def test_other_event_types_say_nothing_final() -> None:
    assert event_product_data("check.processing", {"check": {"ai": {}}}, "ai") is None


def test_the_products_merged_are_the_domain_modules() -> None:
    """One list of products (``doccheck.domain``): the ledger reads it, it keeps no copy."""
    assert PRODUCTS is domain.PRODUCTS
