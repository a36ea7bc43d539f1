"""``doccheck.pipeline`` end to end against the real emulator and the real receiver.

Covers: text + multipart + upload submissions; results through webhooks (the receiver's
ledger is the pipeline's ledger); results through polling alone when every delivery is
dropped; a rerun that makes no new check and no new charge; a process killed between
the service's answer and the ledger write that resumes without a second check or charge;
row-level refusals that do not sink the batch; a budget cap; a fatal 401.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doccheck.client import AsyncDocCheckClient, DocCheckClient, RetryPolicy
from doccheck.ledger import Ledger
from doccheck.pipeline import Budget, FatalSubmitError, submit_batch
from tests.factories import assert_complete, plan_for, write_corpus
from tests.factories import start_pipeline_run as start
from tests.factories import submit_plan as submit
from tests.factories import wait_for_run as wait
from tests.fixtures.receiver import ReceiverHandle, scope_for

pytestmark = pytest.mark.integration


def account_with_webhook(emulator: Any, receiver: ReceiverHandle) -> str:
    """A fresh account whose webhook points at the receiver, secret handed to the receiver."""
    api_key = emulator.new_account()
    with DocCheckClient(emulator.base_url, api_key) as client:
        hook = client.put_webhook(receiver.webhook_url)
    receiver.store_secret(hook.secret, scope=scope_for(api_key))
    return api_key


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture
def drop_all_deliveries(webhook_emulator: Any) -> Iterator[Any]:
    webhook_emulator.set_faults(webhook_drop_rate=1.0)
    try:
        yield webhook_emulator
    finally:
        webhook_emulator.reset_faults()


def test_webhooks_complete_the_run_and_rerun_is_free(
    webhook_emulator: Any, receiver: ReceiverHandle, corpus: Path
) -> None:
    emu, ledger = webhook_emulator, receiver.ledger
    api_key = account_with_webhook(emu, receiver)
    plan = plan_for(corpus)
    assert sorted(d.mode for d in plan.documents) == ["multipart", "text", "upload"]
    run_id = start(ledger, plan)
    result = asyncio.run(submit(emu.base_url, api_key, ledger, run_id, plan))
    assert (result.submitted, result.failed, result.already_done) == (3, 0, 0), result
    charged = emu.account_state(api_key)["charged_cents"]
    assert result.cost_cents == charged > 0

    emu.advance(2)  # processing finishes; deliveries reach the receiver before this returns
    waited = asyncio.run(wait(emu.base_url, api_key, ledger, run_id, grace_seconds=600))
    assert not waited.timed_out and waited.pending == [], waited
    assert waited.events_applied >= 6 and waited.polled == 3  # one GET per check, for the scores
    rows = ledger.report_rows(run_id=run_id)
    assert_complete(rows, 3)
    outcomes = {(o.check_id, o.product): o for o in ledger.pending_outcomes(run_id=run_id)}
    assert outcomes == {}
    check_ids = [r["check_id"] for r in rows["ai_results"]]
    assert all(len(ledger.events(check_id=c)) == 2 for c in check_ids)

    # rerun in the same campaign: nothing is sent, nothing is charged
    before = emu.account_state(api_key)
    rerun_id = start(ledger, plan)
    again = asyncio.run(submit(emu.base_url, api_key, ledger, rerun_id, plan))
    assert (again.submitted, again.replayed, again.already_done, again.cost_cents) == (0, 0, 3, 0)
    after = emu.account_state(api_key)
    assert (after["checks"], after["charged_cents"]) == (before["checks"], before["charged_cents"])
    assert_complete(ledger.report_rows(run_id=rerun_id), 3)
    assert ledger.run_summary(rerun_id)["cost_cents"] == charged


def test_polling_alone_completes_when_every_delivery_is_dropped(
    drop_all_deliveries: Any, receiver: ReceiverHandle, tmp_path: Path
) -> None:
    emu, ledger = drop_all_deliveries, receiver.ledger
    api_key = account_with_webhook(emu, receiver)
    plan = plan_for(write_corpus(tmp_path, big=False))
    run_id = start(ledger, plan)
    result = asyncio.run(submit(emu.base_url, api_key, ledger, run_id, plan))
    assert result.submitted == 3
    emu.advance(2)
    waited = asyncio.run(wait(emu.base_url, api_key, ledger, run_id, grace_seconds=0))
    assert not waited.timed_out and waited.events_applied == 0 and waited.polled >= 3
    rows = ledger.report_rows(run_id=run_id)
    assert_complete(rows, 3)
    for r in rows["ai_results"]:
        assert ledger.events(check_id=r["check_id"]) == []
    drops = [d for d in emu.state()["deliveries"] if d["check_id"] in {r["check_id"] for r in rows["ai_results"]}]
    assert drops and all(d["status"] != "succeeded" for d in drops)


def test_wait_times_out_with_pending_reported(webhook_emulator: Any, tmp_path: Path) -> None:
    """Nothing silently disappears: unfinished products come back as pending with check ids."""
    emu = webhook_emulator
    api_key = emu.new_account()
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    plan = plan_for(write_corpus(tmp_path / "c", big=False))
    run_id = start(ledger, plan)
    emu.set_faults(processing_seconds=3600)
    try:
        asyncio.run(submit(emu.base_url, api_key, ledger, run_id, plan))
        waited = asyncio.run(wait(emu.base_url, api_key, ledger, run_id, grace_seconds=0, timeout=0.3))
    finally:
        emu.reset_faults()
    assert waited.timed_out and len(waited.pending) == 6
    assert {p.status for p in waited.pending} == {"processing"}
    rows = ledger.report_rows(run_id=run_id)
    assert {r["status"] for r in rows["ai_results"] + rows["similarity_results"]} == {"pending"}
    assert all(r["check_id"] for r in rows["ai_results"])


CRASH_CHILD = textwrap.dedent(
    """
    import asyncio, os, sys
    from doccheck.client import AsyncDocCheckClient
    from doccheck.ledger import Ledger
    from doccheck.pipeline import SubmitOptions, load_plan, submit_batch

    base_url, api_key, db_url, manifest, campaign, run_id, crash_at = sys.argv[1:8]
    calls = {"n": 0}
    real = Ledger.mark_submitted

    def crashing_mark_submitted(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == int(crash_at):
            os._exit(17)  # killed after the service answered, before the ledger write
        return real(self, *args, **kwargs)

    Ledger.mark_submitted = crashing_mark_submitted
    import doccheck.ledger as bulk  # the answers' rounds, read here when a batch starts: the same crash point
    real_round = bulk.record_answers_and_claims  # a round: answers + next claims, one transaction

    def crashing_round(ledger, items):
        for item in items:
            if isinstance(item, bulk.Answer):
                calls["n"] += 1
                if calls["n"] == int(crash_at):
                    os._exit(17)
        return real_round(ledger, items)

    bulk.record_answers_and_claims = crashing_round
    plan = load_plan(manifest, campaign=campaign, products="ai,similarity", metadata_columns=["group"])

    async def main():
        async with AsyncDocCheckClient(base_url, api_key) as client:
            await submit_batch(client, Ledger(db_url), run_id, plan.documents, SubmitOptions(concurrency=1))

    asyncio.run(main())
    sys.exit(0)
    """
)


@pytest.mark.parametrize("crash_at", [1, 2], ids=["text-doc", "upload-doc"])
def test_crash_between_answer_and_ledger_write_resumes_without_second_charge(
    emulator: Any, corpus: Path, tmp_path: Path, crash_at: int
) -> None:
    api_key = emulator.new_account()
    db_url = f"sqlite:///{tmp_path / 'crash.db'}"
    ledger = Ledger(db_url)
    plan = plan_for(corpus)
    assert [d.mode for d in plan.documents] == ["text", "upload", "multipart"]
    run_id = start(ledger, plan)
    script = tmp_path / "child.py"
    script.write_text(CRASH_CHILD)
    child = subprocess.run(
        [sys.executable, str(script), emulator.base_url, api_key, db_url, str(corpus), plan.campaign, run_id, str(crash_at)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    assert child.returncode == 17, child.stderr[-3000:]
    crashed = plan.documents[crash_at - 1]
    assert ledger.submission_for_key(crashed.idempotency_key).state in {"submitting", "uploading"}
    at_crash = emulator.account_state(api_key)
    assert at_crash["checks"] == crash_at  # the service did create the crashed document's check

    result = asyncio.run(submit(emulator.base_url, api_key, ledger, run_id, plan))
    assert (result.already_done, result.replayed, result.submitted, result.failed) == (crash_at - 1, 1, 3 - crash_at, 0)
    after = emulator.account_state(api_key)
    assert after["checks"] == 3
    assert after["charged_cents"] == at_crash["charged_cents"] + result.cost_cents
    # every document billed exactly once: the sum of the three checks' own costs
    rows = ledger.report_rows(run_id=run_id)
    sent = [r for r in rows["submissions"] if r["status"] == "submitted"]
    assert len({r["check_id"] for r in sent}) == 3
    assert after["charged_cents"] == sum(r["cost_cents"] for r in sent)
    assert after.get("waiting_uploads", 0) == 0  # the resume reused the recorded upload


def test_row_failures_do_not_sink_the_batch_and_rerun_retries_them(emulator: Any, tmp_path: Path) -> None:
    api_key = emulator.new_account(balance_cents=3)  # enough for the first text only
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    plan = plan_for(write_corpus(tmp_path / "c", big=False))
    run_id = start(ledger, plan)
    result = asyncio.run(submit(emulator.base_url, api_key, ledger, run_id, plan, concurrency=1))
    assert (result.submitted, result.failed) == (1, 2), result
    assert {f.code for f in result.failures} == {"insufficient_balance"}
    rows = {r["document_id"]: r for r in ledger.report_rows(run_id=run_id)["submissions"]}
    assert rows["t2"]["status"] == "failed" and rows["t2"]["error_code"] == "insufficient_balance"
    assert rows["t2"]["error_message"]


def test_budget_leaves_documents_unsent(emulator: Any, tmp_path: Path) -> None:
    api_key = emulator.new_account()
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    plan = plan_for(write_corpus(tmp_path / "c", big=False))
    first_cost = plan.documents[0].estimated_cost_cents
    run_id = start(ledger, plan)
    budget = Budget(max_spend_cents=first_cost)
    result = asyncio.run(submit(emulator.base_url, api_key, ledger, run_id, plan, concurrency=1, budget=budget))
    assert (result.submitted, result.skipped_budget) == (1, 2), result
    assert emulator.account_state(api_key)["charged_cents"] <= first_cost
    statuses = [r["status"] for r in ledger.report_rows(run_id=run_id)["submissions"]]
    assert statuses.count("skipped_budget") == 2


def test_unauthorized_is_fatal(emulator: Any, tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    plan = plan_for(write_corpus(tmp_path / "c", big=False))
    run_id = start(ledger, plan)

    async def go() -> None:
        async with AsyncDocCheckClient(emulator.base_url, "sk_test_wrong", retry=RetryPolicy(max_attempts=1)) as c:
            await submit_batch(c, ledger, run_id, plan.documents)

    with pytest.raises(FatalSubmitError) as exc:
        asyncio.run(go())
    assert "sk_test_wrong" not in str(exc.value)
