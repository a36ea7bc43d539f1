"""Money as the service counts it (issue 8, defect 3, invariant 7), against a real emulator.

With injected product failures the service refunds each failed product; the reported net
(the run summary, and the ``net_cents``/``cost_cents`` columns of the submissions report)
must equal the emulator's ``charged_cents`` for the account exactly, also when rows share
one check (identical content) and when a rerun replays the same keys. On SQLite and on
PostgreSQL.
"""

from __future__ import annotations

import asyncio
import csv
import uuid
from pathlib import Path
from typing import Any

import pytest

from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import SubmitOptions, load_plan, submit_batch, wait_for_results
from tests.factories import essay
from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration


def write_manifest(folder: Path, count: int, duplicates: int) -> Path:
    """``count`` distinct texts plus ``duplicates`` rows repeating earlier texts (same key, one check)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "money.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["document_id", "text"])
        writer.writeheader()
        for i in range(count):
            writer.writerow({"document_id": f"d{i}", "text": essay(i)})
        for i in range(duplicates):
            writer.writerow({"document_id": f"dup{i}", "text": essay(i)})
    return path


async def _run_once(emu: EmulatorHandle, key: str, ledger: Ledger, manifest: Path, campaign: str) -> str:
    plan = load_plan(manifest, campaign=campaign, products="ai,similarity")
    run_id = ledger.start_run(campaign=campaign, manifest=str(manifest), products=["ai", "similarity"])
    async with AsyncDocCheckClient(emu.base_url, key) as client:
        await submit_batch(client, ledger, run_id, plan.documents, SubmitOptions(concurrency=8))
        await asyncio.to_thread(emu.advance, 5)  # every product finishes (or fails) now
        waited = await wait_for_results(client, ledger, run_id, timeout=60, grace_seconds=0, poll_interval=0.1)
    assert not waited.pending, waited.pending
    return run_id


def _reported(ledger: Ledger, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows = [r for r in ledger.report_rows(run_id=run_id)["submissions"] if r["status"] != "rejected"]
    return ledger.run_summary(run_id), rows


def test_reported_net_equals_the_service_charge_with_product_failures(
    isolated_emulator: EmulatorHandle, ledger_url: str, tmp_path: Path
) -> None:
    emu = isolated_emulator
    emu.set_faults(product_failure_rate=0.3, processing_seconds=1)
    try:
        key = emu.new_account()
        ledger = Ledger(ledger_url)
        manifest = write_manifest(tmp_path / "m", count=30, duplicates=4)
        campaign = f"money-{uuid.uuid4().hex[:8]}"
        run_id = asyncio.run(_run_once(emu, key, ledger, manifest, campaign))
        account = emu.account_state(key)
        summary, rows = _reported(ledger, run_id)

        assert account["checks"] == summary["checks"] == 30  # the 4 duplicate rows share checks
        assert summary["refunded_cents"] > 0, "30 % failures over 60 products refunded nothing?"
        assert summary["net_cents"] == account["charged_cents"]
        assert summary["charged_cents"] - summary["refunded_cents"] == account["charged_cents"]
        assert sum(r["net_cents"] for r in rows) == account["charged_cents"]
        assert sum(r["cost_cents"] for r in rows) == account["charged_cents"]
        assert sum(r["charged_cents"] for r in rows) == summary["charged_cents"]
        dup_money = [r["charged_cents"] for r in rows if r["document_id"].startswith("dup")]
        assert dup_money == [0, 0, 0, 0]  # counted on the first row of each check

        # A rerun replays nothing and charges nothing; its report still tells the same money.
        rerun = asyncio.run(_run_once(emu, key, ledger, manifest, campaign))
        assert emu.account_state(key)["charged_cents"] == account["charged_cents"]
        again, _ = _reported(ledger, rerun)
        assert (again["charged_cents"], again["refunded_cents"], again["net_cents"]) == (
            summary["charged_cents"], summary["refunded_cents"], summary["net_cents"],
        )  # fmt: skip
        ledger.close()
    finally:
        emu.reset_faults()


def test_refunds_learnt_from_webhook_events_match_the_service(
    webhook_emulator: EmulatorHandle, receiver: Any, tmp_path: Path
) -> None:
    """The same figure when the failures arrive as ``check.failed`` deliveries through the real
    receiver (a check whose products all failed is never fetched: its refund is the events')."""
    from doccheck.client import DocCheckClient
    from tests.fixtures.receiver import scope_for

    emu, ledger = webhook_emulator, receiver.ledger
    key = emu.new_account()
    with DocCheckClient(emu.base_url, key) as client:
        hook = client.put_webhook(receiver.webhook_url)
    receiver.store_secret(hook.secret, scope=scope_for(key))
    emu.set_faults(product_failure_rate=0.5)
    try:
        manifest = write_manifest(tmp_path / "m", count=12, duplicates=0)
        campaign = f"money-hooks-{uuid.uuid4().hex[:8]}"
        plan = load_plan(manifest, campaign=campaign, products="ai,similarity")
        run_id = ledger.start_run(campaign=campaign, manifest=str(manifest), products=["ai", "similarity"])

        async def go() -> Any:
            async with AsyncDocCheckClient(emu.base_url, key) as client:
                await submit_batch(client, ledger, run_id, plan.documents)
                await asyncio.to_thread(emu.advance, 2)  # deliveries reach the receiver before this returns
                return await wait_for_results(client, ledger, run_id, timeout=60, grace_seconds=600, poll_interval=0.1)

        waited = asyncio.run(go())
    finally:
        emu.reset_faults()
    # the session's receiver is shared: events of other tests' checks may be applied in the same pass
    assert not waited.pending and waited.events_applied >= 24, waited
    summary, rows = _reported(ledger, run_id)
    account = emu.account_state(key)
    assert summary["refunded_cents"] > 0 and waited.failed > 0
    assert summary["net_cents"] == sum(r["net_cents"] for r in rows) == account["charged_cents"]
