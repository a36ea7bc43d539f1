"""``python deployments/serve.py`` against the session Prefect server (a real ``prefect server
start``): the deployments register with their schedule and trigger, a ``bulk_check`` run
triggered through the API (``run_deployment``) completes against the emulator, writes its
reports, and leaves its artifacts (progress, outcome table, summary, histogram) on the server.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from doccheck.outputs import escape_markdown
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.prefect_server import eventually
from tests.fixtures.serve import start_serve, stop_serve, wait_for_deployment

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

ROOT = Path(__file__).resolve().parents[2]
ESSAY = (
    "Rivers shape the towns that grow beside them. Mills once turned on the current, bridges "
    "decided where markets met, and floods taught each generation where not to build. "
)


@dataclass
class Served:
    """A running ``deployments/serve.py`` and what it was given."""

    process: subprocess.Popen[bytes]
    suffix: str
    api_key: str
    database_url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def served(prefect_server: Any, emulator: EmulatorHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    key = emulator.new_account()
    suffix = f"-test-{uuid.uuid4().hex[:6]}"
    database_url = f"sqlite:///{tmp_path_factory.mktemp('served') / 'ledger.db'}"
    process, log_path = start_serve(
        prefect_server.api_url,
        {
            "DOCCHECK_API_KEY": key,
            "DOCCHECK_BASE_URL": emulator.base_url,
            "DOCCHECK_DATABASE_URL": database_url,
            "DOCCHECK_DEPLOYMENT_SUFFIX": suffix,
        },
    )
    try:
        wait_for_deployment(f"bulk-check/weekly-course-check{suffix}", process, log_path)
        yield Served(process, suffix, key, database_url, log_path)
    finally:
        stop_serve(process)


def _manifest(folder: Path) -> Path:
    rows = [
        {"document_id": "r-1", "text": ESSAY * 3, "products": "ai;similarity"},
        {"document_id": "r-2", "text": ESSAY * 3 + "And a last sentence of mine.", "products": "ai;similarity"},
        {"document_id": "r-3", "text": "Short notes on bees and clover in a meadow at noon. " * 8, "products": "ai"},
        {"document_id": "r-4", "text": "", "products": "ai"},
    ]
    path = folder / "manifest.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_served_deployments_have_schedule_and_trigger(served: Served) -> None:
    from prefect.client.orchestration import get_client

    bulk = wait_for_deployment(f"bulk-check/weekly-course-check{served.suffix}", served.process, served.log_path)
    (schedule,) = bulk.schedules
    assert schedule.schedule.cron == "0 6 * * 1" and schedule.schedule.timezone == "Europe/London"
    assert "api_key" not in str(bulk.parameters).lower().replace("api_key_block", "")
    collect = wait_for_deployment(f"collect-results/on-check-events{served.suffix}", served.process, served.log_path)
    # serve() registers the deployment first and its trigger (an automation) right after:
    # wait for the automation instead of reading it once.
    deadline = time.monotonic() + 30
    with get_client(sync_client=True) as client:
        while True:
            automations = client.read_automations_by_name("doccheck: collect results when checks finish")
            if any(getattr(a.actions[0], "deployment_id", None) == collect.id for a in automations):
                break
            assert served.process.poll() is None and time.monotonic() < deadline, (
                "the collect-results trigger was not registered as an automation"
            )
            time.sleep(0.3)


def test_bulk_check_deployment_run_completes_with_reports_and_artifacts(served: Served, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
        LogFilter,
        LogFilterFlowRunId,
    )
    from prefect.deployments import run_deployment

    out = tmp_path / "reports"
    campaign = f"served-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    flow_run = run_deployment(
        f"bulk-check/weekly-course-check{served.suffix}",
        parameters={
            "source": {"manifest": str(_manifest(tmp_path)), "products": ["ai", "similarity"], "campaign": campaign},
            "output": {"out_dir": str(out)},
            "waiting": {"grace_seconds": 0, "poll_interval": 0.2, "timeout": 60},
        },
        timeout=120,
        poll_interval=1,
        as_subflow=False,
    )
    elapsed = time.monotonic() - started
    assert flow_run.state is not None and flow_run.state.is_completed(), (flow_run.state, served.log())
    assert flow_run.name == f"bulk-check {campaign}"

    # reports on disk
    latest = out / "latest"
    subs = pq.read_table(latest / "submissions.parquet").to_pandas()
    assert sorted(subs["document_id"]) == ["r-1", "r-2", "r-3", "r-4"]
    ai = pq.read_table(latest / "ai_results.parquet").to_pandas()
    assert set(ai["status"]) == {"completed"} and len(ai) == 3
    (run_dir,) = [p for p in out.iterdir() if p.name not in ("latest", "tables", "catalog.duckdb")]
    assert (run_dir / "scores.png").read_bytes().startswith(b"\x89PNG")

    with get_client(sync_client=True) as client:  # shipped by the served process's workers: waited for
        artifacts = eventually(
            lambda: client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run.id]))
            ),
            lambda found: {"progress", "table", "markdown", "image"} <= {a.type for a in found},
        )
        logs = eventually(
            lambda: client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run.id]))),
            lambda found: any(log.message.startswith("plan for") for log in found),
        )
        task_runs = eventually(
            lambda: client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id]))),
            lambda found: any(t.name.startswith("record and submit ") for t in found),
        )
    by_type = {a.type: a for a in artifacts}
    assert {"progress", "table", "markdown", "image"} <= set(by_type), [a.type for a in artifacts]
    slug = campaign.lower()
    keys = {a.key for a in artifacts}
    assert {f"bulk-check-{slug}", f"bulk-check-{slug}-outcomes", f"bulk-check-{slug}-scores",
            f"bulk-check-{slug}-progress"} <= keys  # fmt: skip
    assert float(by_type["progress"].data) == 100.0
    by_key = {a.key: a for a in artifacts}
    markdown = by_key[
        f"bulk-check-{slug}"
    ].data  # ids and paths are markdown-escaped (doccheck.outputs.escape_markdown)
    assert escape_markdown("r-4") in markdown and "Highest AI scores" in markdown
    assert escape_markdown(run_dir) in markdown
    assert by_type["image"].data.startswith("data:image/png;base64,")
    outcomes = next(a for a in artifacts if a.key == f"bulk-check-{slug}-outcomes")  # also a cohort-pairs table
    table = {row["product"]: row for row in __import__("json").loads(outcomes.data)}
    assert table["ai"]["completed"] == 3 and table["similarity"]["completed"] == 2
    messages = [log.message for log in logs]
    assert any(m.startswith("plan for") for m in messages), messages
    assert any(t.name.startswith("record and submit ") for t in task_runs if t.flow_run_id == flow_run.id)
    with get_client(sync_client=True) as client:  # the flow run carries the campaign; its task runs no tag
        assert f"campaign:{campaign}" in client.read_flow_run(flow_run.id).tags
    assert not any(t.tags for t in task_runs if t.flow_run_id == flow_run.id)
    assert served.api_key not in served.log()
    print(f"served bulk_check run: {elapsed:.1f} s")
