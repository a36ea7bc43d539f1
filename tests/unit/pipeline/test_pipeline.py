"""``doccheck.pipeline`` against a scripted in-memory client: the decisions, not the HTTP.

(The same paths run against the real emulator in tests/integration/test_pipeline.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from doccheck.client import AuthenticationError, Check, ConflictError, PaymentRequiredError
from doccheck.ledger import Ledger
from doccheck.pipeline import (
    Budget,
    FatalSubmitError,
    Progress,
    SubmitOptions,
    poll_pending,
    submit_batch,
    wait_for_results,
)
from doccheck.pipeline.sending._reconcile import with_reference
from tests.factories import planned, record
from tests.fakes import FakeClient, docs, run
from tests.fixtures.events import event_body


def test_submit_then_rerun_sends_nothing(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    progress: list[Progress] = []
    first = run(submit_batch(client, ledger, run_id, docs(5), SubmitOptions(on_progress=progress.append)))
    assert (first.submitted, first.cost_cents, first.total) == (5, 5, 5)
    assert progress[-1] == Progress(done=5, total=5, phase="submit")
    calls = len(client.calls)
    again = run(submit_batch(client, ledger, ledger.start_run(campaign="c1"), docs(5)))
    assert (again.already_done, again.submitted, again.cost_cents) == (5, 0, 0)
    assert len(client.calls) == calls


def test_same_key_twice_in_a_batch_is_sent_once(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    a = planned("a", idempotency_key="same")
    b = planned("b", row=2, idempotency_key="same")
    result = run(submit_batch(client, ledger, run_id, [a, b]))
    assert (result.submitted, result.already_done) == (1, 1) and client.calls == ["submit"]
    subs = ledger.report_rows(run_id=run_id)["submissions"]
    assert {r["document_id"]: r["check_id"] for r in subs} == {"a": "chk-1", "b": "chk-1"}


def test_resume_after_crash_replays_without_charge(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    [doc] = docs(1)
    # a crash: the service has the check, the ledger only says "submitting"
    ledger.mark_submitting(doc.idempotency_key, campaign="c1", document_id="d1", products=doc.products, mode="text")
    client._create(doc.idempotency_key, doc.products, with_reference({"document_id": "d1"}, doc.idempotency_key))
    result = run(submit_batch(client, ledger, run_id, [doc]))
    assert (result.replayed, result.reconciled, result.submitted, result.cost_cents) == (1, 1, 0, 0)
    assert len(client.checks) == 1 and "submit" not in client.calls  # found in the list, not resent
    assert ledger.submission_for_key(doc.idempotency_key).state == "submitted"


def test_upload_resume_uses_the_recorded_upload(ledger: Ledger, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("word " * 1000)
    doc = planned("u1", mode="upload", path=big, text=None, size_bytes=big.stat().st_size)
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    ledger.record_documents(run_id, [doc])
    ledger.mark_submitting(doc.idempotency_key, campaign="c1", document_id="u1", products=doc.products, mode="upload")
    ledger.mark_upload_created(doc.idempotency_key, "up-old")
    client.uploads.add("up-old")
    result = run(submit_batch(client, ledger, run_id, [doc]))
    assert result.submitted == 1 and client.calls == ["list", "create_check:up-old"]  # reconciled first
    # an upload the service no longer has: start a fresh one
    doc2 = planned("u2", mode="upload", path=big, text=None, size_bytes=big.stat().st_size, idempotency_key="k2")
    ledger.mark_submitting("k2", campaign="c1", document_id="u2", products=doc2.products, mode="upload")
    ledger.mark_upload_created("k2", "up-deleted")
    client.calls.clear()
    result = run(submit_batch(client, ledger, run_id, [doc2]))
    assert result.submitted == 1
    assert client.calls[:2] == ["list", "create_check:up-deleted"]
    assert client.calls[2:4] == ["create_upload", "put_upload"]
    assert ledger.submission_for_key("k2").upload_id != "up-deleted"


def test_row_errors_are_recorded_and_batch_goes_on(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    client.fail["d2"] = PaymentRequiredError("balance too low", status_code=402, code="insufficient_balance")
    client.fail["d3"] = ConflictError("key reused", status_code=409, code="idempotency_conflict")
    result = run(submit_batch(client, ledger, run_id, docs(4)))
    assert (result.submitted, result.failed) == (2, 2)
    assert {(f.document_id, f.code) for f in result.failures} == {
        ("d2", "insufficient_balance"),
        ("d3", "idempotency_conflict"),
    }
    # a rerun retries the failed rows (the balance was topped up)
    client.fail.clear()
    again = run(submit_batch(client, ledger, run_id, docs(4)))
    assert (again.already_done, again.submitted) == (2, 2)


def test_missing_file_is_a_row_error(ledger: Ledger, tmp_path: Path) -> None:
    doc = planned("m", mode="upload", path=tmp_path / "vanished.txt", text=None, size_bytes=5_000_000)
    result = run(submit_batch(FakeClient(), ledger, ledger.start_run(campaign="c1"), [doc]))
    assert result.failed == 1 and result.failures[0].code


def test_unauthorized_aborts_the_batch(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    client.fail["d1"] = AuthenticationError("unknown key", status_code=401, code="unauthorized")
    with pytest.raises(FatalSubmitError):
        run(submit_batch(client, ledger, run_id, docs(3), SubmitOptions(concurrency=1)))


def test_budget_skips_and_reports(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    budget = Budget(max_spend_cents=7)  # each doc estimates 3 cents, the service charges 1
    result = run(
        submit_batch(
            client, ledger, run_id, docs(10, estimated_cost_cents=3), SubmitOptions(budget=budget, concurrency=1)
        )
    )
    # reservations are settled with the real charge, so more fit than 7 // 3
    assert result.submitted + result.skipped_budget == 10 and result.skipped_budget > 0
    assert budget.spent_cents == result.cost_cents <= 7 and budget.reserved_cents == 0
    statuses = [r["status"] for r in ledger.report_rows(run_id=run_id)["submissions"]]
    assert statuses.count("skipped_budget") == result.skipped_budget
    with pytest.raises(ValueError):
        Budget(-1)


def test_poll_pending_respects_grace_and_fetches_announced(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    run(submit_batch(client, ledger, run_id, docs(2)))
    # within the grace period, silent checks are left to the webhooks
    assert run(poll_pending(client, ledger, run_id=run_id, older_than_seconds=3600)).polled == 0
    # an event announces chk-1: it is fetched at once, grace or not
    client.finish("chk-1")
    record(ledger, event_body("e1", "chk-1", "ai"))
    ledger.apply_pending_events()
    polled = run(poll_pending(client, ledger, run_id=run_id, older_than_seconds=3600))
    assert (polled.polled, polled.updated) == (1, 1) and client.calls[-1] == "get:chk-1"
    # with no grace, the silent one is polled
    polled = run(poll_pending(client, ledger, run_id=run_id, older_than_seconds=0))
    assert polled.polled == 1 and client.calls[-1] == "get:chk-2"


def test_wait_for_results_times_out_with_pending(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    run(submit_batch(client, ledger, run_id, docs(2, products=("ai", "similarity"))))
    client.finish("chk-1")
    now = [0.0]
    sleeps: list[float] = []

    async def fake_sleep(s: float) -> None:
        sleeps.append(s)
        now[0] += s

    result = run(wait_for_results(client, ledger, run_id, timeout=10, grace_seconds=0, poll_interval=2,
                                  clock=lambda: now[0], sleep=fake_sleep))  # fmt: skip
    assert result.timed_out and sleeps == [2, 2, 2, 2, 2]
    assert {(p.check_id, p.product) for p in result.pending} == {("chk-2", "ai"), ("chk-2", "similarity")}
    assert (result.total, result.completed, result.failed) == (4, 2, 0)
    # later the check finishes: the next wait completes at once
    client.finish("chk-2")
    done = run(
        wait_for_results(client, ledger, run_id, timeout=10, grace_seconds=0, clock=lambda: now[0], sleep=fake_sleep)
    )
    assert not done.timed_out and done.pending == [] and done.completed == 4


def test_without_webhooks_polling_starts_at_once_and_backs_off(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    client.webhook_url = None  # nothing will ever be delivered: no grace period
    run(submit_batch(client, ledger, run_id, docs(2)))
    now = [0.0]
    sleeps: list[float] = []

    async def fake_sleep(s: float) -> None:
        sleeps.append(s)
        now[0] += s

    result = run(wait_for_results(client, ledger, run_id, timeout=8, grace_seconds=30, poll_interval=2,
                                  clock=lambda: now[0], sleep=fake_sleep))  # fmt: skip
    assert result.timed_out and sleeps == [0.25, 0.5, 1, 2, 2, 2, 2]
    assert client.calls.count("get:chk-1") == 8  # polled from the first round, grace or not
    client.finish("chk-1")
    client.finish("chk-2")
    done = run(wait_for_results(client, ledger, run_id, grace_seconds=30, clock=lambda: now[0], sleep=fake_sleep))
    assert done.completed == 2 and not done.pending


def test_with_an_account_webhook_silent_products_wait_out_the_grace(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    run(submit_batch(client, ledger, run_id, docs(1)))
    now = [0.0]

    async def fake_sleep(s: float) -> None:
        now[0] += s

    result = run(wait_for_results(client, ledger, run_id, timeout=6, grace_seconds=30, poll_interval=2,
                                  clock=lambda: now[0], sleep=fake_sleep))  # fmt: skip
    assert result.timed_out and not any(c.startswith("get:") for c in client.calls)


def test_wait_reports_progress(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    run(submit_batch(client, ledger, run_id, docs(3)))
    for cid in list(client.checks):
        client.finish(cid)
    seen: list[Progress] = []
    result = run(wait_for_results(client, ledger, run_id, grace_seconds=0, on_progress=seen.append))
    assert seen[-1] == Progress(done=3, total=3, phase="wait") and result.completed == 3
    assert ledger.outcome_counts(run_id=run_id) == {"total": 3, "completed": 3, "failed": 0, "pending": 0}


def test_unexpected_row_error_is_recorded_and_401_while_polling_is_not_wrapped(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    client.fail["d1"] = RuntimeError("odd")
    result = run(submit_batch(client, ledger, run_id, docs(2)))
    assert (result.submitted, result.failed) == (1, 1) and result.failures[0].code == "internal_error"

    async def refuse(check_id: str) -> Check:
        raise AuthenticationError("unknown key", status_code=401, code="unauthorized")

    client.get_check = refuse  # type: ignore[method-assign]
    with pytest.raises(AuthenticationError):
        run(poll_pending(client, ledger, run_id=run_id))


def test_events_applied_in_chunks(ledger: Ledger) -> None:
    for i in range(7):
        record(ledger, event_body(f"e{i}", f"chk-{i}", "ai"))
    assert ledger.apply_pending_events(chunk=3) == 7
    assert ledger.unapplied_event_count() == 0
    for i in range(7, 12):
        record(ledger, event_body(f"e{i}", f"chk-{i}", "ai"))
    assert ledger.apply_pending_events(limit=2, chunk=3) == 2
    assert ledger.apply_pending_events() == 3
