"""A run's scenarios at the level that owns them: the shared run seam (issue 42).

``run_checks`` is the one sequence of a run (record, send, wait, report); the ``bulk_check``
flow, ``doccheck run`` without a server and the notebook differ only in how each step runs.
So each scenario runs here once in full, with the steps ``doccheck run --no-prefect`` and the
notebook use (``OverlappingLocalSteps``), against the emulator over real sockets: a rerun that
makes no new check and no new charge and a later collect that finishes it, a budget that
leaves documents unsent and reported, results by polling alone when every delivery is dropped.
The flow keeps its own thin tests that it reaches this seam and shows it in Prefect
(tests/integration/test_bulk_check.py), the notebook its own (tests/integration/test_notebook.py).
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from doccheck.client import AsyncDocCheckClient, DocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import OverlappingLocalSteps, RunOptions, RunSummary, collect_runs, load_plan, run_checks
from tests.factories import text_manifest
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.receiver import ReceiverHandle, scope_for

pytestmark = pytest.mark.integration


def _options(tmp_path: Path, manifest: Path, base_url: str, database_url: str | None = None, **flat: Any) -> RunOptions:
    return RunOptions.from_flat(
        manifest=str(manifest), out_dir=str(tmp_path / "reports"), campaign=f"seam-{uuid.uuid4().hex[:10]}",
        base_url=base_url, database_url=database_url or f"sqlite:///{tmp_path / 'ledger.db'}", **flat,
    )  # fmt: skip


async def _run(options: RunOptions, ledger: Ledger, key: str) -> RunSummary:
    async with AsyncDocCheckClient(options.connection.base_url, key) as client:
        return await run_checks(options, OverlappingLocalSteps(ledger, client))


def _table(out: Path, name: str) -> Any:
    return pq.read_table(out / "latest" / f"{name}.parquet").to_pandas()


def test_a_rerun_makes_no_new_check_and_no_new_charge_and_collect_finishes_it(
    emulator: EmulatorHandle, tmp_path: Path
) -> None:
    """Moved from the flow (test_bulk_check.py), where it ran as two flow runs and a collect flow."""
    key = emulator.new_account()
    options = _options(tmp_path, text_manifest(tmp_path), emulator.base_url, grace_seconds=0, poll_interval=0.1,
                       wait=False)  # fmt: skip
    with closing(Ledger(options.connection.database_url or "")) as ledger:
        first = asyncio.run(_run(options, ledger, key))
        before = emulator.account_state(key)
        assert first.submitted == 3 and before["checks"] == 3 and before["charged_cents"] == first.spent_cents > 0

        second = asyncio.run(_run(options, ledger, key))
        after = emulator.account_state(key)
        assert second.submitted == 0 and second.reused == 3 and second.spent_cents == 0
        assert after["checks"] == before["checks"] and after["charged_cents"] == before["charged_cents"]
        assert after["balance_cents"] == before["balance_cents"]

        # Later collection finishes the run without touching the service's billing.
        emulator.advance(5)

        async def collect() -> RunSummary:
            async with AsyncDocCheckClient(emulator.base_url, key) as client:
                return await collect_runs(ledger, client, run_id=second.run_id, out_dir=str(tmp_path / "reports"))

        collected = asyncio.run(collect())
    assert collected.status == "finished" and collected.pending == 0
    assert emulator.account_state(key)["charged_cents"] == before["charged_cents"]
    ai = _table(tmp_path / "reports", "ai_results")
    assert len(ai) == 3 and (ai["status"] == "completed").all()


def test_a_budget_leaves_documents_unsent_and_reported(emulator: EmulatorHandle, tmp_path: Path) -> None:
    """Moved from the flow (test_bulk_check.py); the campaign's cap shared by two processes is
    test_campaign_budget.py's, a price known only at completion test_service_profiles.py's."""
    key = emulator.new_account()
    manifest = text_manifest(tmp_path)
    costs = {d.document_id: d.estimated_cost_cents for d in load_plan(manifest).documents}
    budget = costs["t-1"]  # enough for the first document only (sent one at a time)
    options = _options(tmp_path, manifest, emulator.base_url, max_spend_cents=budget, concurrency=1, wait=False)
    with closing(Ledger(options.connection.database_url or "")) as ledger:
        summary = asyncio.run(_run(options, ledger, key))
    account = emulator.account_state(key)
    assert account["charged_cents"] == summary.spent_cents <= budget
    assert summary.submitted == 1 and summary.unsent_budget == 2
    subs = _table(tmp_path / "reports", "submissions")
    unsent = subs[subs["status"] == "skipped_budget"]
    assert len(unsent) == summary.unsent_budget
    assert unsent["check_id"].isna().all() and (unsent["cost_cents"] == 0).all()
    assert unsent["error_message"].str.contains("budget").all()
    assert account["checks"] == summary.submitted


def test_every_delivery_dropped_polling_alone_completes(
    webhook_emulator: EmulatorHandle, receiver: ReceiverHandle, tmp_path: Path
) -> None:
    """Moved from the flow (test_bulk_check.py): the account's webhook points at the receiver,
    every delivery is dropped, and the run's wait polls every result in."""
    key = webhook_emulator.new_account()
    with DocCheckClient(webhook_emulator.base_url, key) as client:
        webhook = client.put_webhook(receiver.webhook_url)
    assert webhook.secret is not None
    receiver.store_secret(webhook.secret, scope=scope_for(key))
    out = tmp_path / "reports"
    options = _options(
        tmp_path,
        text_manifest(tmp_path),
        webhook_emulator.base_url,
        receiver.database_url,
        grace_seconds=0.5,
        poll_interval=0.2,
        wait_timeout=60,
        concurrency=1,
    )  # fmt: skip  (sequential, so t-2 is compared with an already indexed t-1)
    webhook_emulator.set_faults(webhook_drop_rate=1.0)
    try:
        with closing(Ledger(receiver.database_url)) as ledger:
            summary = asyncio.run(_run(options, ledger, key))
    finally:
        webhook_emulator.reset_faults()
    assert summary.status == "finished", summary
    assert summary.products == {"ai": {"completed": 3}, "similarity": {"completed": 2}}
    deliveries = [d for d in webhook_emulator.state()["deliveries"] if d["url"] == receiver.webhook_url]
    ids = set(_table(out, "ai_results")["check_id"])
    assert all(d["status"] != "delivered" for d in deliveries if d["check_id"] in ids)
    assert ids <= {d["check_id"] for d in deliveries}  # deliveries were attempted (and dropped) for every check
    assert _table(out, "ai_results")["score"].notna().all()
    sim = _table(out, "similarity_results").set_index("document_id")
    assert sim.loc["t-2", "score"] > 50  # the near-duplicate pair is found
    subs = _table(out, "submissions").set_index("document_id")
    assert subs.loc["t-4", "status"] == "rejected" and subs.loc["t-5", "status"] == "rejected"
    assert "plagiarism" in subs.loc["t-5", "error_message"]
