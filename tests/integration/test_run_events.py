"""The flow's own Prefect events on the session's real server: a small ``bulk_check`` run
emits ``doccheck.document.flagged`` for each flagged document (ids and reasons, never a name
or a text), one ``doccheck.run.*`` event and an asset materialization per table it wrote, and an automation created through the Prefect
client with an ``EventTrigger`` on ``doccheck.document.flagged`` is triggered by them."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from doccheck.outputs import connect_catalog
from prefect_doccheck.flows import drain_prefect
from prefect_doccheck.flows.bulk_check import bulk_check
from prefect_doccheck.tasks import FLAGGED, MATERIALIZED, RUN_INCOMPLETE, asset_key
from tests.factories import flow_kwargs
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.prefect_server import eventually, server_events

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

SAME = "The harbour lanterns guided every boat home through the autumn fog, night after night, " * 5


def _manifest(folder: Path) -> Path:
    """Four documents: two identical (a cohort pair, so both flagged), two unrelated."""
    texts = {
        "s1": SAME,
        "s2": SAME,
        "s3": "Bees keep the orchard alive; without them the apple trees would stand bare each spring. " * 5,
        "s4": "A railway timetable is a promise about time that a whole town agrees to believe in. " * 5,
    }
    folder.mkdir()
    lines = ["document_id,path,name"]
    for doc, text in texts.items():
        (folder / f"{doc}.txt").write_text(text, encoding="utf-8")
        lines.append(f"{doc},{doc}.txt,Student {doc.upper()}")
    (folder / "manifest.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / "manifest.csv"


async def _automation(campaign: str) -> Any:
    from prefect.automations import Automation, DoNothing, EventTrigger

    trigger = EventTrigger(expect={FLAGGED}, match={"doccheck.campaign": campaign}, posture="Reactive", threshold=1)
    return await Automation(name=f"flagged-{campaign}", trigger=trigger, actions=[DoNothing()]).acreate()


def _wait_for(api_url: str, prefix: str, name: str) -> list[dict[str, Any]]:
    # the server's trigger service works asynchronously: nothing to advance
    return eventually(lambda: [e for e in server_events(api_url, [prefix]) if e["event"] == name], bool)


def test_flagged_and_run_events_trigger_an_automation(
    prefect_server: Any, emulator: EmulatorHandle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCCHECK_API_KEY", emulator.new_account())
    campaign = f"events-{uuid.uuid4().hex[:8]}"
    automation = asyncio.run(_automation(campaign))
    summary = asyncio.run(bulk_check(**flow_kwargs(
        manifest=str(_manifest(tmp_path / "docs")), products=["ai"], out_dir=str(tmp_path / "reports"),
        campaign=campaign, base_url=emulator.base_url, database_url=f"sqlite:///{tmp_path / 'ledger.db'}",
        wait=False,
    )))  # fmt: skip
    drain_prefect()
    assert summary.status == "submitted"  # results not awaited: the run is not complete yet

    flagged = _wait_for(prefect_server.api_url, f"doccheck.document.{campaign}.", FLAGGED)
    assert sorted(e["resource"]["doccheck.document_id"] for e in flagged) == ["s1", "s2"]
    for event in flagged:
        assert event["payload"] == {"campaign": campaign, "document_id": event["resource"]["doccheck.document_id"],
                                    "run_id": summary.run_id, "reasons": ["cohort"]}  # fmt: skip
        assert "Student" not in str(event) and "harbour" not in str(event)  # no name, no text
    [run_event] = _wait_for(prefect_server.api_url, f"doccheck.run.{summary.run_id}", RUN_INCOMPLETE)
    assert run_event["payload"]["flagged"] == 2 and run_event["payload"]["flag_events"] == 2
    assert run_event["payload"]["status"] == "submitted" and run_event["payload"]["documents"] == 4

    # Each table the run wrote is an asset (tasks/_assets.py), and the flow rebuilt the catalog.
    out = tmp_path / "reports"
    made = _wait_for(prefect_server.api_url, asset_key(out, ""), MATERIALIZED)
    tables = {e["resource"]["prefect.resource.name"]: e for e in made}
    assert {"submissions", "ai_results", "documents"} <= set(tables), sorted(tables)
    assert tables["documents"]["payload"]["rows"] == 4 and tables["documents"]["payload"]["run_id"] == summary.run_id
    roles = {r["prefect.resource.role"] for r in tables["documents"]["related"]}
    assert {"asset", "asset-materialized-by", "flow-run"} <= roles, roles
    with connect_catalog(out) as catalog:
        assert catalog.execute("SELECT run_id, documents FROM runs").fetchall() == [(summary.run_id, 4)]

    triggered = _wait_for(prefect_server.api_url, f"prefect.automation.{automation.id}", "prefect.automation.triggered")
    assert triggered, "the automation on doccheck.document.flagged was not triggered"
