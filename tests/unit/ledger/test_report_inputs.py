"""The digest of a run's report inputs (issue 49): the same rows give the same digest in
another run; any change a report shows gives another; what reports never show does not."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from doccheck.ledger import Ledger, report_inputs_digest
from doccheck.ledger._tables import DocumentRow


def _run_of(ledger: Ledger, documents: list[str]) -> str:
    run_id = ledger.start_run(campaign="course")
    with ledger.session() as s:
        for doc in documents:
            s.add(DocumentRow(run_id=run_id, campaign="course", document_id=doc, content_hash=f"h-{doc}",
                              idempotency_key=f"key-{doc}", metadata={"course": "c1"}))  # fmt: skip
    return run_id


def _sql(ledger: Ledger, statement: str, **params: object) -> None:
    with ledger.engine.begin() as conn:
        conn.execute(text(statement), params)


def test_the_same_rows_in_another_run_give_the_same_digest(ledger: Ledger) -> None:
    first, second = _run_of(ledger, ["s1", "s2"]), _run_of(ledger, ["s2", "s1"])  # another order, other ids
    assert report_inputs_digest(ledger, first) == report_inputs_digest(ledger, second)
    third = _run_of(ledger, ["s1", "s2", "s3"])
    assert report_inputs_digest(ledger, third) != report_inputs_digest(ledger, first)
    with pytest.raises(ValueError, match="no run 'nope'"):
        report_inputs_digest(ledger, "nope")


def test_a_change_a_report_shows_changes_the_digest(ledger: Ledger) -> None:
    run_id = _run_of(ledger, ["s1"])
    now = datetime.now(UTC)
    _sql(ledger, "INSERT INTO submissions (campaign, document_id, idempotency_key, products, state, attempts, "
         "replayed, check_id, created_at, updated_at) VALUES ('course', 's1', 'key-s1', '[\"ai\"]', 'submitted', 1, "
         "false, 'chk_1', :now, :now)", now=now)  # fmt: skip
    seen = {report_inputs_digest(ledger, run_id)}
    _sql(ledger, "UPDATE submissions SET last_polled_at = :now", now=now)  # polled again: nothing to show
    assert report_inputs_digest(ledger, run_id) in seen
    changes = [
        "INSERT INTO outcomes (check_id, product, campaign, status, fetched, source, updated_at) "
        "VALUES ('chk_1', 'ai', 'course', 'processing', false, 'poll', :now)",
        "UPDATE outcomes SET status = 'completed', score = 0.9",
        "INSERT INTO contradictions (check_id, product, event_id, held_status, delivered_status, detected_at) "
        "VALUES ('chk_1', 'ai', 'evt_1', 'completed', 'failed', :now)",
        "UPDATE submissions SET cost_cents = 3",
    ]
    for change in changes:
        _sql(ledger, change, now=now)
        digest = report_inputs_digest(ledger, run_id)
        assert digest not in seen, change
        seen.add(digest)
    ledger.set_disposition("course", "s1", "cleared", note="seen")
    assert report_inputs_digest(ledger, run_id) not in seen
