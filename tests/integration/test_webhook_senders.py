"""Issue 39: whatever sender the service is, the results and the money are the service's.

Each webhook sender profile of the emulator (:mod:`doccheck.emulator._senders`) runs through
the whole path in one process: submit → the emulator finishes the products and delivers as
that sender → the receiver verifies and stores → the ledger applies → polling fetches what
a delivery could not settle → report rows. The truth is the emulator's own state.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from doccheck.pipeline import SubmitOptions, poll_pending, submit_batch
from tests.factories import planned
from tests.fixtures.senders import HOOK, Wired, wired

pytestmark = pytest.mark.integration

DAY = 86400.0
BOTH = ("ai", "similarity")
#: Profiles whose deliveries are valid: the webhook settles a result (a fetch brings scores).
BY_WEBHOOK = ["default", "webhook-late-failure", "webhook-product-spellings", "webhook-error-shapes",
              "webhook-thin", "webhook-several-v1", "webhook-redeliveries"]  # fmt: skip
#: Profiles whose deliveries say nothing usable: polling settles every result.
BY_POLLING = ["webhook-unknown-product", "webhook-millisecond-t"]


def _docs(n: int, tag: str) -> list[Any]:
    return [planned(f"{tag}-{i}", BOTH, row=i + 1,
                    text=f"Essay {tag} {i}: rivers, heat and shade in growing cities, season {i}. " * (12 + i))
            for i in range(n)]  # fmt: skip


async def _run(w: Wired, docs: list[Any], *, days: float = 0.0) -> str:
    run_id = w.ledger.start_run(campaign="c")
    result = await submit_batch(w.client, w.ledger, run_id, docs, SubmitOptions(concurrency=4, webhook_url=None))
    assert result.submitted == len(docs)
    await w.emu.advance(5)  # every product finishes; deliveries made
    await w.emu.advance(60)  # retried and late deliveries
    if days:
        await w.emu.advance(days * DAY)  # redeliveries days later, on the service's clock
    w.ledger.apply_pending_events()
    await poll_pending(w.client, w.ledger, run_id=run_id, older_than_seconds=3600)  # what events asked for
    return run_id


def _assert_truth(w: Wired, run_id: str, n_products: int) -> dict[str, Any]:
    truth = w.truth()
    rows = w.ledger.report_rows(run_id=run_id)
    seen = 0
    for table, product in (("ai_results", "ai"), ("similarity_results", "similarity")):
        for row in rows[table]:
            service = truth["checks"][row["check_id"]][product]
            assert row["status"] == service["status"], (product, row, service)
            if service["status"] == "completed":
                assert row["score"] == pytest.approx(service["score"]), (product, row)
            else:
                assert row["error_message"], row  # the service's words, whatever the shape
            seen += 1
    assert seen == n_products
    summary = w.ledger.run_summary(run_id)
    assert summary["net_cents"] == truth["net_cents"], summary  # money as the service counts it
    assert set(summary["products"]) <= set(BOTH), summary["products"]  # no product of another spelling
    with w.ledger.engine.connect() as conn:
        products = conn.execute(text("SELECT product, count(*) FROM outcomes GROUP BY product")).all()
        dup = conn.execute(text("SELECT event_id FROM webhook_events GROUP BY event_id HAVING count(*) > 1")).all()
    assert dict(products) == {"ai": n_products // 2, "similarity": n_products // 2}  # nothing stored twice
    assert dup == []
    assert w.statuses and all(s < 500 for s in w.statuses), w.statuses  # never a 5xx
    return summary


@pytest.mark.parametrize("profile", BY_WEBHOOK + BY_POLLING)
def test_each_sender_ends_with_the_services_truth(tmp_path: Path, profile: str) -> None:
    async def scenario() -> None:
        async with wired(tmp_path, profile, failure_rate=0.3) as w:
            days = 3.0 if profile == "webhook-redeliveries" else 0.0
            run_id = await _run(w, _docs(6, profile), days=days)
            by_webhook = w.ledger.outcome_counts(run_id=run_id)
            if profile in BY_WEBHOOK:
                assert by_webhook["pending"] == 0, (profile, by_webhook)  # no polling was needed
            else:
                await poll_pending(w.client, w.ledger, run_id=run_id, older_than_seconds=0)  # the fallback
            summary = _assert_truth(w, run_id, 12)
            if profile == "webhook-late-failure":
                settled = {c["settled"] for c in summary["contradictions"]}
                assert summary["contradictions"] and settled <= {"completed"}, summary["contradictions"]
            if profile == "webhook-millisecond-t":
                assert set(w.statuses) == {401}  # refused, every attempt; polling took over
            if profile == "webhook-redeliveries":
                assert w.statuses.count(200) > 12  # three deliveries a product and the one days later

    asyncio.run(scenario())


def test_a_redelivery_days_later_is_a_duplicate_and_stores_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with wired(tmp_path, "webhook-redeliveries") as w:
            run_id = await _run(w, _docs(2, "late"))
            with w.ledger.engine.connect() as conn:
                before = conn.execute(text("SELECT count(*) FROM webhook_events")).scalar_one()
            assert before == 2 * 2 * 3  # three ids a product (the original and two fresh copies)
            await w.emu.advance(3 * DAY)
            w.ledger.apply_pending_events()
            with w.ledger.engine.connect() as conn:
                after = conn.execute(text("SELECT count(*) FROM webhook_events")).scalar_one()
            assert after == before  # the original ids, again, three days later: remembered
            deliveries = [d for d in w.emu.dispatcher.deliveries if d.url == HOOK]
            assert all(d.status == "succeeded" for d in deliveries)
            _assert_truth(w, run_id, 4)

    asyncio.run(scenario())
