"""End-to-end: the ``bulk_check`` flow against a real emulator, a real receiver and a real
Prefect server, over real sockets.

Each test has its own emulator account and its own campaign (so idempotency keys and
ledger rows never collide between tests). The webhook tests use ``webhook_emulator``,
whose virtual clock is never advanced far, so its signatures stay fresh for the
real-time receiver; the flow writes to the receiver's own ledger, where the events land.

The flow's sequence is ``run_checks``, shared with ``doccheck run`` without a server and the
notebook: the scenarios of a run (a free rerun and a later collect, a budget, polling alone
when every delivery is dropped) run once at that seam (tests/integration/test_run_scenarios.py).
Here the flow's own: the whole sample corpus through webhooks into the reports, its dry run,
and what Prefect shows of it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pyarrow.parquet as pq
import pytest

from doccheck.client import DocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import RunSummary
from prefect_doccheck.flows.bulk_check import bulk_check
from tests.factories import RUN_ESSAY, flow_kwargs, text_manifest
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.prefect_server import eventually, server_events
from tests.fixtures.receiver import ReceiverHandle, scope_for

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

SAMPLE_DATA = Path(__file__).resolve().parents[2] / "sample_data"


def _campaign() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


def _run(**params: Any) -> RunSummary:
    return asyncio.run(bulk_check(**flow_kwargs(**params)))


def _reports(out: Path) -> dict[str, pd.DataFrame]:
    names = ["submissions", "ai_results", "similarity_results", "similarity_sources"]
    return {n: pq.read_table(out / "latest" / f"{n}.parquet").to_pandas() for n in names}


def _connect_webhook(emulator: EmulatorHandle, receiver: ReceiverHandle, api_key: str) -> None:
    with DocCheckClient(emulator.base_url, api_key) as client:
        webhook = client.put_webhook(receiver.webhook_url)
    assert webhook.secret is not None
    receiver.store_secret(webhook.secret, scope=scope_for(api_key))


@pytest.fixture
def hooked_account(webhook_emulator: EmulatorHandle, receiver: ReceiverHandle, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh account on the webhook emulator whose webhook points at the receiver."""
    key = webhook_emulator.new_account()
    _connect_webhook(webhook_emulator, receiver, key)
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    return key


def test_sample_data_with_webhooks_gives_complete_reports(
    prefect_server: Any, webhook_emulator: EmulatorHandle, receiver: ReceiverHandle, hooked_account: str, tmp_path: Path
) -> None:
    data = tmp_path / "sample_data"
    shutil.copytree(SAMPLE_DATA, data, ignore=shutil.ignore_patterns("make_corpus.py"))
    out = tmp_path / "reports"
    campaign = _campaign()
    summary = _run(
        manifest=str(data / "manifest.csv"),
        products=["ai", "similarity"],
        out_dir=str(out),
        campaign=campaign,
        base_url=webhook_emulator.base_url,
        database_url=receiver.database_url,
        grace_seconds=60,  # long: the results must come through the webhooks, not polling
        poll_interval=0.2,
        wait_timeout=60,
        batch_size=4,
        # One request at a time per batch: the emulator compares a submission only with
        # checks already indexed, so the near-duplicate pair (rows 7 and 8, same batch)
        # must not be created concurrently for similarity to find it.
        concurrency=2,
        metadata_columns=["section"],
    )
    assert summary.status == "finished", summary
    assert summary.documents == 13 and summary.rejected == 7
    assert summary.counts_by_mode == {"text": 2, "multipart": 10, "upload": 1, "rejected": 7}
    assert summary.submitted == 13 and summary.pending == 0

    account = webhook_emulator.account_state(hooked_account)
    assert account["checks"] == 13
    assert account["charged_cents"] == summary.spent_cents > 0

    # The results came through the receiver (signed deliveries stored in the ledger).
    ledger = Ledger(receiver.database_url)
    try:
        run = ledger.get_run(summary.run_id)
        assert run is not None and run.status == "finished"
        check_ids = {s.check_id for s in map(ledger.submission_for_key, _keys(out)) if s}
        events = [e for cid in check_ids for e in ledger.events(cid)]
        n_products = summary.products["ai"]["completed"] + summary.products["similarity"]["completed"]
        assert len(events) == n_products
    finally:
        ledger.close()

    reports = _reports(out)
    subs = reports["submissions"]
    assert len(subs) == 20 and subs["document_id"].is_unique is False  # the duplicate id row is reported too
    accepted = subs[subs["status"] != "rejected"]
    assert set(accepted["status"]) == {"submitted"} and len(accepted) == 13
    assert accepted["check_id"].notna().all() and accepted["idempotency_key"].str.startswith("dc1-").all()
    rejected = subs[subs["status"] == "rejected"]
    assert len(rejected) == 7 and rejected["error_message"].str.len().gt(10).all()
    assert (rejected["cost_cents"] == 0).all()
    assert int(accepted["cost_cents"].sum()) == summary.spent_cents
    assert "meta_section" in subs.columns and "meta_student_email" not in subs.columns

    ai = reports["ai_results"]
    assert len(ai) == 13 and (ai["status"] == "completed").all()
    assert ai["score"].between(0, 1).all() and set(ai["label"]) <= {"human", "mixed", "ai"}

    sim = reports["similarity_results"]
    assert len(sim) == 11 and (sim["status"] == "completed").all()
    sources = reports["similarity_sources"]
    # Whichever of the near-duplicate pair was checked second finds the other one.
    pair = sources[sources["document_id"].isin(["envs101-w6-007", "envs101-w6-008"])]
    assert not pair.empty and (pair["kind"] == "submission").any() and pair["percent"].max() > 50
    upload_row = subs[subs["document_id"] == "envs101-w6-011"]
    assert upload_row["mode"].item() == "upload"


def _keys(out: Path) -> list[str]:
    subs = pq.read_table(out / "latest" / "submissions.parquet").to_pandas()
    return [k for k in subs["idempotency_key"] if isinstance(k, str)]


def test_dry_run_sends_and_records_nothing(
    prefect_server: Any, emulator: EmulatorHandle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = emulator.new_account()
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    db = tmp_path / "ledger.db"
    summary = _run(
        manifest=str(text_manifest(tmp_path)),
        out_dir=str(tmp_path / "reports"),
        dry_run=True,
        base_url=emulator.base_url,
        database_url=f"sqlite:///{db}",
    )
    assert summary.status == "planned" and summary.dry_run
    assert summary.counts_by_mode == {"text": 3, "multipart": 0, "upload": 0, "rejected": 2}
    assert summary.total_words > 0 and summary.estimated_cost_cents > 0
    assert {r["document_id"] for r in summary.rejections} == {"t-4", "t-5"}
    assert emulator.account_state(key)["checks"] == 0
    assert not db.exists() and not (tmp_path / "reports").exists()


@pytest.mark.parametrize("overlap", [True, False])  # one task run for the two phases, or one a batch
def test_flow_runs_are_visible_in_prefect(
    prefect_server: Any, emulator: EmulatorHandle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, overlap: bool
) -> None:
    key = emulator.new_account()
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    campaign = _campaign()
    _run(
        manifest=str(text_manifest(tmp_path)),
        out_dir=str(tmp_path / "reports"),
        campaign=campaign,
        base_url=emulator.base_url,
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}",
        wait=False,
        batch_size=2,
        overlap=overlap,
    )
    from prefect_doccheck.flows import drain_prefect

    drain_prefect()
    api = prefect_server.api_url
    runs = httpx.post(
        f"{api}/flow_runs/filter", json={"flow_runs": {"name": {"any_": [f"bulk-check {campaign}"]}}}
    ).json()
    assert len(runs) == 1 and runs[0]["state_type"] == "COMPLETED"
    assert key not in str(runs[0]["parameters"])  # the key never reaches the Prefect API
    manifest = str(tmp_path / "manifest.csv")
    # Tasks get batch references or options, never documents: no text reaches the Prefect API.
    sending = {"record and submit " + manifest} if overlap else {"record " + manifest, "submit batch 1/2",
                                                                  "submit batch 2/2"}  # fmt: skip
    task_runs = eventually(  # recorded by the server from the task runs' events: waited for
        lambda: httpx.post(f"{api}/task_runs/filter", json={"flow_runs": {"id": {"any_": [runs[0]["id"]]}}}).json(),
        lambda found: sending | {"write reports"} <= {t["name"] for t in found},
    )
    names = {t["name"] for t in task_runs}
    assert sending | {"write reports"} <= names, names
    assert (
        not any(n.startswith("submit batch") for n in names)
        if overlap
        else "record and submit " + manifest not in names
    )
    # The campaign tags the flow run; its task runs carry no tag, so Prefect makes no tag-concurrency
    # round trip for them (which a SQLite-backed server may refuse, for a 2 s retry: tasks/_run_tags.py).
    assert f"campaign:{campaign}" in runs[0]["tags"]
    assert not any(t["tags"] for t in task_runs), [t["tags"] for t in task_runs]
    logs = eventually(
        lambda: httpx.post(f"{api}/logs/filter", json={"logs": {"flow_run_id": {"any_": [runs[0]["id"]]}}}).json(),
        bool,
    )
    events = eventually(
        lambda: server_events(api, ["prefect.flow-run.", "prefect.task-run."]),
        lambda found: any(e["resource"]["prefect.resource.id"] == f"prefect.flow-run.{runs[0]['id']}" for e in found),
    )
    assert any(e["resource"]["prefect.resource.id"] == f"prefect.flow-run.{runs[0]['id']}" for e in events)
    for record in (runs, task_runs, logs, events):
        seen = json.dumps(record)
        assert RUN_ESSAY[:60] not in seen and "trees and shade" not in seen
    # No score yet (wait=False): the outcomes and the summary, no histogram of nothing.
    artifacts = eventually(
        lambda: httpx.post(f"{api}/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [runs[0]["id"]]}}}),
        lambda answer: any((a["key"] or "").endswith("-outcomes") for a in answer.json()),
    )
    keys = {a["key"] or "" for a in artifacts.json()}
    assert any(k.endswith("-outcomes") for k in keys) and not any(k.endswith("-scores") for k in keys), keys
    assert not list((tmp_path / "reports").rglob("scores.png"))
