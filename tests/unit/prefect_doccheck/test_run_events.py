"""The flow's run events stay bounded: at most ``MAX_FLAG_EVENTS`` flagged-document events a run,
and the run event counts them all (the events themselves on a real server: tests/integration/test_run_events.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from doccheck.pipeline import RunSummary
from prefect_doccheck.tasks import _assets as assets
from prefect_doccheck.tasks import _run_events as events
from prefect_doccheck.tasks._run_events import (
    FLAGGED,
    MAX_FLAG_EVENTS,
    RUN_COMPLETED,
    emit_run_events,
    flagged_documents,
)


@pytest.fixture(autouse=True)
def asset_events(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The asset events, kept here (the tests of the run events send none to a server)."""
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(assets, "emit_event", lambda event, **kw: sent.append({"event": event, **kw}))
    return sent


def test_each_table_is_an_asset_with_a_stable_key_and_the_run_in_its_metadata(
    tmp_path: Path, asset_events: list[dict[str, Any]]
) -> None:
    run_dir = tmp_path / "my reports" / "hist101-20261127T000000000Z-r1"
    run_dir.mkdir(parents=True)
    _documents(run_dir, 6)
    pq.write_table(pa.table({"document_id": ["d1", "d2"]}), run_dir / "submissions.parquet")
    summary = RunSummary(status="finished", campaign="hist101", run_id="r1", report_dir=str(run_dir),
                         manifest=str(tmp_path / "manifest.csv"))  # fmt: skip
    assert assets.emit_table_assets(summary) == 2
    [referenced] = [e for e in asset_events if e["event"] == assets.REFERENCED]
    assert referenced["resource"]["prefect.resource.id"] == f"file://{tmp_path.resolve()}/manifest.csv"
    made = {e["resource"]["prefect.resource.name"]: e for e in asset_events if e["event"] == assets.MATERIALIZED}
    assert set(made) == {"documents", "submissions"}
    key = made["documents"]["resource"]["prefect.resource.id"]
    assert key == f"file://{(tmp_path / 'my_reports').resolve()}/documents"  # no space: a valid asset key
    assert made["documents"]["payload"] == {"campaign": "hist101", "run_id": "r1", "table": "documents", "rows": 6,
                                            "run_folder": run_dir.name, "schema_version": 1}  # fmt: skip
    assert {r["prefect.resource.role"] for r in made["submissions"]["related"]} == {"asset", "asset-materialized-by"}
    from prefect.assets import Asset

    Asset(key=key)  # Prefect's own validation of the key


def test_a_run_folder_in_a_bucket_is_an_asset_keyed_by_its_url(
    tmp_path: Path, asset_events: list[dict[str, Any]]
) -> None:
    """``--out`` on a store: the keys and the flags come from the bucket's objects, never a path of
    the worker that wrote them (fsspec's memory filesystem stands for the bucket)."""
    from fsspec.implementations.memory import MemoryFileSystem

    from doccheck.storage import copy_file, resolve

    MemoryFileSystem.store.clear()
    _documents(tmp_path, 6)
    run_dir = "memory://term/reports/hist101-20261127T000000000Z-r1"
    copy_file(tmp_path / "documents.parquet", resolve(f"{run_dir}/documents.parquet"))
    summary = RunSummary(status="finished", campaign="hist101", run_id="r1", report_dir=run_dir)
    try:
        assert assets.emit_table_assets(summary) == 1
        [made] = [e for e in asset_events if e["event"] == assets.MATERIALIZED]
        assert made["resource"]["prefect.resource.id"] == "memory://term/reports/documents"
        assert made["payload"]["rows"] == 6
        assert flagged_documents(run_dir)[1] == 3
    finally:
        MemoryFileSystem.store.clear()


def _documents(folder: Path, n: int) -> None:
    rows = [{"document_id": f"d{i}", "flagged": i % 2 == 0, "ai_band": "low" if i % 4 else "too_short",
             "ai_label": "human", "ai_score": 0.3, "similarity_score": 30.0 if i % 4 == 0 else 0.0,
             "cohort_match_count": 0, "name": "Secret Student"} for i in range(n)]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), folder / "documents.parquet")


def test_flagged_documents_are_capped_and_counted(tmp_path: Path) -> None:
    _documents(tmp_path, 600)  # 300 flagged
    first, total = flagged_documents(tmp_path, limit=MAX_FLAG_EVENTS)
    assert total == 300 and len(first) == MAX_FLAG_EVENTS and first[0]["document_id"] == "d0"
    assert "name" not in first[0]  # only the columns that say why
    assert flagged_documents(tmp_path / "absent") == ([], 0)


def test_one_event_per_flag_up_to_the_cap_then_one_run_event_with_the_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _documents(tmp_path, 600)
    (tmp_path / "calibration.json").write_text(json.dumps({"threshold": 0.25}), encoding="utf-8")
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(events, "emit_event", lambda event, **kw: sent.append({"event": event, **kw}))
    summary = RunSummary(status="finished", campaign="hist101", run_id="r1", documents=600, report_dir=str(tmp_path))
    assert emit_run_events(summary) == {"flag_events": MAX_FLAG_EVENTS, "flagged": 300}
    flags = [e for e in sent if e["event"] == FLAGGED]
    assert len(flags) == MAX_FLAG_EVENTS and len({e["id"] for e in flags}) == MAX_FLAG_EVENTS
    assert flags[0]["payload"] == {"campaign": "hist101", "document_id": "d0", "run_id": "r1",
                                   "reasons": ["similarity"]}  # too short: never an AI reason  # fmt: skip
    assert flags[1]["payload"]["reasons"] == ["ai"]  # score 0.3 >= the page's threshold 0.25
    assert "Secret Student" not in json.dumps(sent, default=str)
    [run] = [e for e in sent if e["event"] == RUN_COMPLETED]
    assert run["payload"]["flagged"] == 300 and run["payload"]["flag_events"] == MAX_FLAG_EVENTS
    # the same run and document: the same event id (a collect does not make a second event)
    again: list[dict[str, Any]] = []
    monkeypatch.setattr(events, "emit_event", lambda event, **kw: again.append({"event": event, **kw}))
    emit_run_events(summary)
    assert [e["id"] for e in again if e["event"] == FLAGGED] == [e["id"] for e in flags]


def test_an_event_failure_never_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(event: str, **kw: Any) -> None:
        raise ConnectionError("no server")

    _documents(tmp_path, 4)
    monkeypatch.setattr(events, "emit_event", broken)
    summary = RunSummary(status="pending", campaign="c", run_id="r", report_dir=str(tmp_path))
    assert emit_run_events(summary) == {"flag_events": 0, "flagged": 0}
