"""Event-driven collection, all real: a receiver started with ``--prefect-events`` turns each
verified delivery into a ``doccheck.check.*`` event on the session Prefect server, and the
``collect-results`` deployment served by ``deployments/serve.py`` is triggered by those
events (one run for the burst, with the campaign as its parameter) and rewrites the reports.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pyarrow.parquet as pq
import pytest

from doccheck.client import DocCheckClient
from tests.factories import flow_kwargs
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.receiver import ReceiverHandle, scope_for, start_receiver, stop_receiver
from tests.fixtures.serve import start_serve, stop_serve, wait_for_deployment

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

TEXT = "Lanterns on the harbour wall guided the boats home through the autumn fog each night. " * 6


@pytest.fixture(scope="module")
def events_receiver(prefect_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReceiverHandle]:
    db = tmp_path_factory.mktemp("events-receiver") / "ledger.db"
    handle = start_receiver(f"sqlite:///{db}", "--prefect-events", env={"PREFECT_API_URL": prefect_server.api_url})
    try:
        yield handle
    finally:
        stop_receiver(handle)


def _read_events(api_url: str, check_ids: set[str], since: datetime) -> list[dict[str, Any]]:
    """This test's events, or none yet when the server is too busy to answer in time.

    The session server is shared by every integration test: late in a run it holds thousands
    of events, and its SQLite database may be busy persisting more. The query is bounded to
    the events since the test began, and a slow answer is one more round of the caller's
    deadline loop, not a failure (CI once saw this read take over 10 s).
    """
    body = {
        "filter": {
            "occurred": {"since": since.isoformat()},
            "event": {"prefix": ["doccheck.check."]},
            "resource": {"id": [f"doccheck.check.{c}" for c in check_ids]},
        },
        "limit": 50,
    }
    try:
        with httpx.Client(trust_env=False, timeout=20) as http:
            answer = http.post(f"{api_url}/events/filter", json=body)
    except httpx.TimeoutException:
        return []
    answer.raise_for_status()
    return list(answer.json()["events"])


@pytest.mark.slow
def test_verified_deliveries_become_prefect_events_that_trigger_collect_results(
    prefect_server: Any,
    webhook_emulator: EmulatorHandle,
    events_receiver: ReceiverHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    from prefect_doccheck.flows.bulk_check import bulk_check

    began = datetime.now(UTC) - timedelta(seconds=5)
    key = webhook_emulator.new_account()
    with DocCheckClient(webhook_emulator.base_url, key) as client:
        webhook = client.put_webhook(events_receiver.webhook_url)
    assert webhook.secret is not None
    events_receiver.store_secret(webhook.secret, scope=scope_for(key))

    out = tmp_path / "reports"
    suffix = f"-events-{uuid.uuid4().hex[:6]}"
    serve, serve_log = start_serve(
        prefect_server.api_url,
        {
            "DOCCHECK_API_KEY": key,
            "DOCCHECK_BASE_URL": webhook_emulator.base_url,
            "DOCCHECK_DATABASE_URL": events_receiver.database_url,
            "DOCCHECK_DEPLOYMENT_SUFFIX": suffix,
            "DOCCHECK_REPORTS_DIR": str(out),
            "DOCCHECK_COLLECT_WITHIN_S": "30",
            "DOCCHECK_COLLECT_DELAY_S": "2",
        },
    )
    try:
        collect = wait_for_deployment(f"collect-results/on-check-events{suffix}", serve, serve_log)

        # submit without waiting: the results must come back through the events
        campaign = f"events-{uuid.uuid4().hex[:8]}"
        manifest = tmp_path / "manifest.csv"
        pd.DataFrame(
            [{"document_id": f"e-{i}", "text": f"{TEXT} Number {i}.", "products": "ai"} for i in range(3)]
        ).to_csv(manifest, index=False)
        monkeypatch.setenv("DOCCHECK_API_KEY", key)
        summary = asyncio.run(
            bulk_check(
                **flow_kwargs(
                    manifest=str(manifest),
                    products=["ai"],
                    out_dir=str(tmp_path / "first"),
                    campaign=campaign,
                    base_url=webhook_emulator.base_url,
                    database_url=events_receiver.database_url,
                    wait=False,
                )
            )  # fmt: skip
        )
        assert summary.submitted == 3
        run_id = summary.run_id
        check_ids = {
            r["check_id"] for r in events_receiver.ledger.report_rows(run_id=run_id)["submissions"] if r["check_id"]
        }
        assert len(check_ids) == 3

        # the service finishes; deliveries reach the receiver, which emits Prefect events
        deadline = time.monotonic() + 90
        events: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            webhook_emulator.advance(1)
            events = _read_events(prefect_server.api_url, check_ids, began)
            if len(events) >= 3:
                break
            time.sleep(0.5)
        assert len(events) == 3, (events, events_receiver.log())
        for event in events:
            assert event["event"] == "doccheck.check.completed"
            assert event["resource"]["doccheck.campaign"] == campaign
            assert event["related"][0]["prefect.resource.role"] == "campaign"
            assert key not in str(event) and webhook.secret.get_secret_value() not in str(event)

        # the trigger runs collect-results for this campaign (once for the burst); bounded, and
        # generous: on a loaded machine the served run was seen still RUNNING after 60 s
        deadline = time.monotonic() + 240
        runs: list[Any] = []
        with get_client(sync_client=True) as client:
            while time.monotonic() < deadline:
                runs = client.read_flow_runs(
                    deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[collect.id]))
                )
                if runs and all(r.state is not None and r.state.is_final() for r in runs):
                    break
                time.sleep(0.5)
        assert len(runs) == 1, ([(r.name, r.state) for r in runs], serve_log.read_text(errors="replace"))
        (run,) = runs
        assert run.state is not None and run.state.is_completed(), (run.state, serve_log.read_text(errors="replace"))
        assert run.parameters["campaign"] == campaign
        assert run.name == f"collect-results {campaign}"
        ai = pq.read_table(out / "latest" / "ai_results.parquet").to_pandas()
        assert sorted(ai["document_id"]) == ["e-0", "e-1", "e-2"] and set(ai["status"]) == {"completed"}
    finally:
        stop_serve(serve)
