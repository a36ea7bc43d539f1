"""Money as the service counts it: charged and refunded cents per check, once per check id.

Runs on a SQLite file here and on PostgreSQL in tests/integration/test_money_postgres.py
(same tests, ``ledger`` fixture overridden).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from doccheck.ledger import Ledger
from doccheck.ledger._money import campaign_money, total_money
from tests.factories import BOTH, apply_event, check_json, planned


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    yield led
    led.close()


def _submit(ledger: Ledger, run_id: str, doc_id: str, check_id: str, *, key: str | None = None, row: int = 1) -> str:
    doc = planned(doc_id, BOTH, row=row, **({"idempotency_key": key} if key else {}))
    ledger.record_documents(run_id, [doc])
    ledger.mark_submitting(doc.idempotency_key, campaign="c1", document_id=doc_id, products=BOTH, mode="text")
    ledger.mark_submitted(doc.idempotency_key, check_json(check_id, BOTH))
    return doc.idempotency_key


def _money(ledger: Ledger, *check_ids: str) -> tuple[int, int, int]:
    with ledger.engine.connect() as conn:
        m = total_money(conn, check_ids)
    return m.charged_cents, m.refunded_cents, m.net_cents


def test_rows_sharing_a_check_are_charged_once(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    _submit(ledger, run_id, "d1", "chk-1", key="k-same", row=1)
    _submit(ledger, run_id, "d2", "chk-1", key="k-same", row=2)  # identical content: same key, same check
    _submit(ledger, run_id, "d3", "chk-2", row=3)
    rows = {r["document_id"]: r for r in ledger.report_rows(run_id=run_id)["submissions"]}
    assert (rows["d1"]["charged_cents"], rows["d2"]["charged_cents"], rows["d3"]["charged_cents"]) == (3, 0, 3)
    assert sum(r["net_cents"] for r in rows.values()) == sum(r["cost_cents"] for r in rows.values()) == 6
    summary = ledger.run_summary(run_id)
    assert (summary["charged_cents"], summary["refunded_cents"], summary["net_cents"], summary["checks"]) == (
        6,
        0,
        6,
        2,
    )


def test_a_replay_charges_nothing_more(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    key = _submit(ledger, run_id, "d1", "chk-1")
    for _ in range(3):  # resumes that replay the key: the service returns the same check
        ledger.mark_submitted(key, {**check_json("chk-1", BOTH), "replayed": True})
    assert _money(ledger, "chk-1") == (3, 0, 3)
    with ledger.engine.connect() as conn:
        assert campaign_money(conn, "c1").charged_cents == 3


def test_a_failed_product_is_refunded_once(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    _submit(ledger, run_id, "d1", "chk-1")
    apply_event(ledger, "evt-1", "chk-1", "similarity", failed=True)
    apply_event(ledger, "evt-1", "chk-1", "similarity", failed=True)  # a duplicate delivery
    apply_event(ledger, "evt-2", "chk-1", "ai", failed=False)
    assert _money(ledger, "chk-1") == (3, 2, 1)
    # a later poll that agrees changes nothing
    polled = check_json("chk-1", BOTH, status="failed",
                        ai={"status": "completed", "score": 0.1, "label": "human"},
                        similarity={"status": "failed", "error": {"code": "processing_failed", "message": "x"}})  # fmt: skip
    ledger.record_check(polled)
    assert _money(ledger, "chk-1") == (3, 2, 1)
    row = ledger.report_rows(run_id=run_id)["submissions"][0]
    assert (row["charged_cents"], row["refunded_cents"], row["net_cents"]) == (3, 2, 1)


def test_a_refund_stated_by_the_service_is_believed(ledger: Ledger) -> None:
    run_id = ledger.start_run(campaign="c1")
    _submit(ledger, run_id, "d1", "chk-1")
    cost = {"ai_cents": 1, "similarity_cents": 2, "total_cents": 3, "billed_words": 100, "refunded_cents": 1}
    ledger.record_check(check_json("chk-1", BOTH, cost=cost, ai={"status": "failed"}))
    assert _money(ledger, "chk-1") == (3, 1, 2)


def test_an_event_before_the_answer_is_refunded_when_the_charge_arrives(ledger: Ledger) -> None:
    apply_event(ledger, "evt-1", "chk-9", "ai", failed=True)  # the receiver was faster than mark_submitted
    assert _money(ledger, "chk-9") == (0, 0, 0)
    run_id = ledger.start_run(campaign="c1")
    _submit(ledger, run_id, "d1", "chk-9")
    assert _money(ledger, "chk-9") == (3, 1, 2)


def test_the_campaign_budget_counts_each_check_once(ledger: Ledger) -> None:
    from doccheck.ledger._campaign_budget import budget_state

    run_id = ledger.start_run(campaign="c1")
    _submit(ledger, run_id, "d1", "chk-1", key="k-same")
    _submit(ledger, run_id, "d2", "chk-1", key="k-same")
    ledger.record_check(check_json("chk-1", BOTH))
    assert budget_state(ledger, "c1").spent_cents == 3


def test_reservations_never_exceed_the_cap_under_contention(ledger: Ledger) -> None:
    """16 threads race for 3-cent reservations under a 20-cent cap: exactly 6 win."""
    import concurrent.futures

    from doccheck.ledger import _campaign_budget as cb

    urls = [ledger.database_url] * 16

    def one(i: int) -> bool:
        other = Ledger(urls[i])  # its own engine and connection, like another process
        try:
            return cb.reserve_budget(other, "c1", f"k{i}", 3, 20)
        finally:
            other.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        granted = sum(pool.map(one, range(16)))
    state = cb.budget_state(ledger, "c1")
    assert granted == 6 and state.reserved_cents == 18 and state.holds == 6


def test_holds_are_adopted_released_and_reclaimed(ledger: Ledger) -> None:
    from datetime import timedelta

    from doccheck.ledger import _campaign_budget as cb

    assert cb.reserve_budget(ledger, "c1", "k1", 5, 10)
    assert cb.reserve_budget(ledger, "c1", "k1", 5, 10)  # a resume of the same key adopts its hold
    assert cb.budget_state(ledger, "c1").reserved_cents == 5
    assert cb.reserve_budget(ledger, "c1", "k2", 5, 10)
    assert not cb.reserve_budget(ledger, "c1", "k3", 1, 10)  # full
    assert cb.budget_state(ledger, "c1").holds == 2  # the refused one holds nothing
    assert cb.release_budget(ledger, "c1", "k2") == 5 and cb.release_budget(ledger, "c1", "k2") == 0
    assert cb.reclaim_budget_holds(ledger, "c1", lease=timedelta(seconds=-1)) == 5  # k1's process "died"
    assert cb.budget_state(ledger, "c1") == cb.BudgetState("c1", 0, 0, 0)


def test_charges_count_against_the_cap_of_later_reservations(ledger: Ledger) -> None:
    from doccheck.ledger import _campaign_budget as cb

    run_id = ledger.start_run(campaign="c1")
    assert cb.reserve_budget(ledger, "c1", "key-d1-ai-similarity", 3, 5)
    _submit(ledger, run_id, "d1", "chk-1")  # charged 3: counted in spent
    assert cb.release_budget(ledger, "c1", "key-d1-ai-similarity") == 3
    assert cb.budget_state(ledger, "c1").spent_cents == 3
    assert not cb.reserve_budget(ledger, "c1", "k2", 3, 5)  # 3 spent + 3 > 5
    assert cb.reserve_budget(ledger, "c1", "k2", 2, 5)


def test_a_price_known_only_at_completion_is_recorded_when_seen(ledger: Ledger) -> None:
    """A service that answers ``cost`` 0 on create and the price on completion (issue 22):
    the later answer's charge is what was charged, in the report and the campaign budget."""
    run_id = ledger.start_run(campaign="c1")
    doc = planned("d1", BOTH)
    ledger.record_documents(run_id, [doc])
    ledger.mark_submitting(doc.idempotency_key, campaign="c1", document_id="d1", products=BOTH, mode="text")
    zero = {"ai_cents": 0, "similarity_cents": 0, "total_cents": 0, "billed_words": 0}
    ledger.mark_submitted(doc.idempotency_key, check_json("chk-late", BOTH, cost=zero))
    assert _money(ledger, "chk-late") == (0, 0, 0)
    priced = {"ai_cents": 6, "similarity_cents": 12, "total_cents": 18, "billed_words": 600}
    ledger.record_check(check_json("chk-late", BOTH, status="completed", cost=priced), source="poll")
    assert _money(ledger, "chk-late") == (18, 0, 18)
    ledger.record_check(check_json("chk-late", BOTH, cost=zero), source="poll")  # never lowered
    assert _money(ledger, "chk-late") == (18, 0, 18)
    from doccheck.ledger._campaign_budget import budget_state

    assert budget_state(ledger, "c1").spent_cents == 18


def test_a_result_refused_here_is_not_a_refund(ledger: Ledger) -> None:
    """An out-of-range score is made the product's ``invalid_response`` failure on this
    side; the service charged it and refunded nothing, so neither does the ledger."""
    run_id = ledger.start_run(campaign="c1")
    _submit(ledger, run_id, "d1", "chk-1")
    bad = {"status": "failed", "error": {"code": "invalid_response", "message": "ai score 87 outside 0..1"}}
    ledger.record_check(check_json("chk-1", BOTH, ai=bad, similarity={"status": "failed"}), source="poll")
    assert _money(ledger, "chk-1") == (3, 2, 1)  # only the similarity's real failure is refunded
