"""Invariant 4, end to end: a real ``bulk_check`` run whose API key and webhook signing secret
come from Prefect ``Secret`` blocks, with real signed deliveries to a real receiver that reads
its secret from a block too. Then EVERYTHING the run wrote is searched for both strings:
the flow run (parameters, name, state), its task runs, its logs, its artifacts, every event
on the Prefect server, the Parquet reports and the PNG beside them, the ledger database
file (with its journal files), the receiver's log, and the returned summary. Neither
string may appear anywhere.

Configuration note: the receiver here reads its secret from a Prefect Secret block
(``--webhook-secret-block``) — NOT from the ledger, where ``doccheck demo`` stores it by
design for a zero-configuration receiver; with the block (or ``DOCCHECK_WEBHOOK_SECRET``)
the ledger never holds the secret.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from doccheck.client import DocCheckClient
from tests.factories import flow_kwargs
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.prefect_server import eventually, server_events
from tests.fixtures.receiver import start_receiver, stop_receiver

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]


def _what_the_run_left(
    api_url: str, campaign: str, *, artifacts: int, events_naming: str = ""
) -> tuple[Any, list[Any], list[Any], list[Any], list[dict[str, Any]]]:
    """The flow run of ``campaign``, its task runs, logs and artifacts (``artifacts`` at least),
    and every event on the server, once Prefect has shipped them: the flow run's own events
    and ``events_naming`` among them. Read too early, a search would find nothing and prove nothing."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterName,
        LogFilter,
        LogFilterFlowRunId,
    )

    with get_client(sync_client=True) as client:
        named = FlowRunFilter(name=FlowRunFilterName(any_=[f"bulk-check {campaign}"]))
        (flow_run,) = client.read_flow_runs(flow_run_filter=named)
        this_run = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id]))
        task_runs = eventually(lambda: client.read_task_runs(flow_run_filter=this_run), bool)
        logs = eventually(
            lambda: client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run.id]))), bool
        )
        found = eventually(
            lambda: client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run.id]))
            ),
            lambda found: len(found) >= artifacts,
        )
    events = eventually(
        lambda: server_events(api_url),
        lambda found: all(mark in json.dumps(found) for mark in (f"prefect.flow-run.{flow_run.id}", events_naming)),
    )
    return flow_run, task_runs, logs, found, events


def _as_bytes(flow_run: Any, task_runs: list[Any], logs: list[Any], artifacts: list[Any], events: list[Any],
              summary: Any) -> dict[str, bytes]:  # fmt: skip
    """What the run left on the Prefect server and returned, as the bytes to search, by name."""
    return {
        "flow run": flow_run.model_dump_json().encode(),
        "task runs": "\n".join(t.model_dump_json() for t in task_runs).encode(),
        "logs": "\n".join(log.model_dump_json() for log in logs).encode(),
        "artifacts": "\n".join(a.model_dump_json() for a in artifacts).encode(),
        "events": json.dumps(events).encode(),
        "summary": summary.model_dump_json().encode(),
    }


TEXT = "The old mill wheel turned all summer, grinding the village's grain beside the slow river. " * 4


@pytest.mark.slow
def test_api_key_and_webhook_secret_never_leave_their_blocks(
    prefect_server: Any,
    webhook_emulator: EmulatorHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect.blocks.system import Secret

    from prefect_doccheck.flows import drain_prefect
    from prefect_doccheck.flows.bulk_check import bulk_check

    # a distinctive key, created through the emulator's control surface
    api_key = f"sk_test_LEAKCANARY_{secrets.token_hex(8)}"
    webhook_emulator._control("POST", "/accounts", {"api_key": api_key, "balance_cents": 100_000})
    tag = uuid.uuid4().hex[:8]
    key_block, secret_block = f"leak-key-{tag}", f"leak-whsec-{tag}"
    Secret(value=api_key).save(key_block)

    # the receiver's secret lives only in a Secret block: it starts with a placeholder,
    # then the account webhook is created and its secret stored in the block, which the
    # receiver re-reads (as after a rotation) within a second
    db_path = tmp_path / "ledger.db"
    database_url = f"sqlite:///{db_path}"
    Secret(value="whsec_placeholder").save(secret_block)
    receiver = start_receiver(
        database_url, "--prefect-events", "--webhook-secret-block", secret_block, "--secret-block-refresh", "0.5"
    )
    try:
        with DocCheckClient(webhook_emulator.base_url, api_key) as client:
            webhook = client.put_webhook(receiver.webhook_url)
        assert webhook.secret is not None
        whsec = webhook.secret.get_secret_value()
        Secret(value=whsec).save(secret_block, overwrite=True)
        time.sleep(0.6)  # one refresh period of the receiver's block cache (real time by design)

        monkeypatch.delenv("DOCCHECK_API_KEY", raising=False)
        monkeypatch.delenv("DOCCHECK_WEBHOOK_SECRET", raising=False)
        manifest = tmp_path / "manifest.csv"
        pd.DataFrame(
            [{"document_id": f"k-{i}", "text": f"{TEXT} Part {i}.", "products": "ai;similarity"} for i in range(3)]
            + [{"document_id": "k-bad", "text": "", "products": "ai"}]
        ).to_csv(manifest, index=False)
        out = tmp_path / "reports"
        campaign = f"leaks-{tag}"
        summary = asyncio.run(
            bulk_check(
                **flow_kwargs(
                    manifest=str(manifest),
                    products=["ai", "similarity"],
                    out_dir=str(out),
                    campaign=campaign,
                    base_url=webhook_emulator.base_url,
                    database_url=database_url,
                    api_key_block=key_block,
                    grace_seconds=30,
                    poll_interval=0.2,
                    wait_timeout=60,
                )
            )  # fmt: skip
        )
        assert summary.status == "finished" and summary.submitted == 3, summary
        # the results came through verified deliveries (signed with the block's secret)
        assert len(receiver.ledger.events()) >= 6, receiver.log()
        drain_prefect()
    finally:
        stop_receiver(receiver)

    # (served collect-results deployments of other tests may be triggered by this run's events)
    flow_run, task_runs, logs, artifacts, events = _what_the_run_left(
        prefect_server.api_url, campaign, artifacts=4, events_naming=f"doccheck.campaign.{campaign}"
    )
    assert flow_run.parameters["api_key_block"] == key_block  # the block's NAME is the only trace
    assert logs and len(artifacts) >= 4 and task_runs

    searched = _as_bytes(flow_run, task_runs, logs, artifacts, events, summary)
    searched["receiver log"] = receiver.log_path.read_bytes()
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"submissions.parquet", "ai_results.parquet", "scores.png"}
    files += [p for p in tmp_path.iterdir() if p.name.startswith("ledger.db")]  # the db and any -wal/-journal
    for path in files:
        searched[str(path)] = path.read_bytes()
    assert any("ledger.db" in name for name in searched)

    for name, blob in searched.items():
        for label, value in (("API key", api_key), ("webhook secret", whsec)):
            assert value.encode() not in blob, f"the {label} leaked into {name}"
            assert value.encode("utf-16-le") not in blob, f"the {label} leaked into {name} (utf-16)"
    # the check itself is sound: the events really are there and name the checks
    assert f"doccheck.campaign.{campaign}" in searched["events"].decode()


def test_api_key_from_a_doccheck_credentials_block_never_leaves_it(
    prefect_server: Any,
    emulator: EmulatorHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The flow gets only the NAME of a ``DocCheckCredentials`` block (address and key from
    the block, nothing from the environment); the key is then searched for everywhere the
    run wrote, as above."""
    from prefect_doccheck import DocCheckCredentials
    from prefect_doccheck.flows import drain_prefect
    from prefect_doccheck.flows.bulk_check import bulk_check

    api_key = f"sk_test_BLOCKCANARY_{secrets.token_hex(8)}"
    emulator._control("POST", "/accounts", {"api_key": api_key, "balance_cents": 100_000})
    tag = uuid.uuid4().hex[:8]
    block_name = f"leak-credentials-{tag}"
    DocCheckCredentials(base_url=emulator.base_url, api_key=api_key, timeout=20).save(block_name)
    for name in ("DOCCHECK_API_KEY", "DOCCHECK_BASE_URL", "DOCCHECK_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)

    manifest = tmp_path / "manifest.csv"
    pd.DataFrame(
        [{"document_id": f"b-{i}", "text": f"{TEXT} Block part {i}.", "products": "ai"} for i in range(3)]
    ).to_csv(manifest, index=False)
    out = tmp_path / "reports"
    database_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    campaign = f"block-leaks-{tag}"
    summary = asyncio.run(
        bulk_check(
            **flow_kwargs(
                manifest=str(manifest),
                products=["ai"],
                out_dir=str(out),
                campaign=campaign,
                database_url=database_url,
                credentials=block_name,
                grace_seconds=30,
                poll_interval=0.2,
                wait_timeout=60,
            )
        )  # fmt: skip
    )
    assert summary.status == "finished" and summary.submitted == 3, summary
    drain_prefect()

    flow_run, task_runs, logs, artifacts, events = _what_the_run_left(prefect_server.api_url, campaign, artifacts=1)
    # the block's name is the only trace of the credentials in the run's parameters
    assert flow_run.parameters["credentials"] == block_name
    assert flow_run.parameters.get("base_url") is None and logs and task_runs and artifacts

    searched = _as_bytes(flow_run, task_runs, logs, artifacts, events, summary)
    for path in [p for p in out.rglob("*") if p.is_file()] + list(tmp_path.glob("ledger.db*")):
        searched[str(path)] = path.read_bytes()
    for name, blob in searched.items():
        assert api_key.encode() not in blob, f"the API key leaked into {name}"
        assert api_key.encode("utf-16-le") not in blob, f"the API key leaked into {name} (utf-16)"
    # the search is sound: the key's account really did the work the reports describe
    assert any(name.endswith("ai_results.parquet") for name in searched)
