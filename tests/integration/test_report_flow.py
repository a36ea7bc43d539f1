"""The Prefect side of the instructor's files: ``bulk_check(download=...)`` writes
report.html + documents.* and the files, links the page in a link artifact, and a later
``collect_results(download=...)`` fetches nothing it already has."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pyarrow.parquet as pq
import pytest

from prefect_doccheck.flows.bulk_check import bulk_check
from prefect_doccheck.flows.collect_results import collect_results
from tests.factories import flow_kwargs
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.prefect_server import eventually

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

ESSAY = "Street trees cool a city block by several degrees on a summer afternoon, and they slow rain. "


def test_bulk_check_writes_report_page_files_and_link_artifact(
    prefect_server: Any, emulator: EmulatorHandle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = emulator.new_account()
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    campaign = f"report-{uuid.uuid4().hex[:8]}"
    manifest = tmp_path / "manifest.csv"
    pd.DataFrame(
        [
            {"document_id": "=cmd|' /C calc'!A0", "text": ESSAY * 3, "student": "@Ann"},
            {"document_id": "b-2", "text": ESSAY * 3 + " Also shade.", "student": "Bob"},
            {"document_id": "c-3", "text": "   ", "student": "Cat"},
        ]
    ).to_csv(manifest, index=False)
    params: dict[str, Any] = dict(
        out_dir=str(tmp_path / "reports"), base_url=emulator.base_url,
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}", grace_seconds=0, poll_interval=0.1,
    )  # fmt: skip
    summary = asyncio.run(
        bulk_check(
            **flow_kwargs(
                manifest=str(manifest),
                products=["ai", "similarity"],
                campaign=campaign,
                metadata_columns=["student"],
                download="similarity_pdf,pdf",
                **params,
            )
        )  # fmt: skip
    )
    assert summary.status == "finished" and summary.downloads is not None
    assert summary.downloads["downloaded"] == 4 and summary.downloads["failed"] == 0
    run_dir = Path(summary.report_dir or "")
    assert summary.report_html == str(run_dir / "report.html") and (run_dir / "report.html").is_file()
    latest = Path(summary.latest_dir or "")
    assert {"report.html", "documents.csv", "documents.parquet"} <= {p.name for p in latest.iterdir()}

    documents = pq.read_table(run_dir / "documents.parquet").to_pandas()
    assert list(documents["status"]) == ["submitted", "submitted", "rejected"]
    assert documents["file_pdf"].notna().sum() == 2
    for rel in documents["file_pdf"].dropna():
        assert (run_dir / rel).read_bytes().startswith(b"%PDF")
    csv_text = (run_dir / "documents.csv").read_text(encoding="utf-8-sig")
    assert "'=cmd|" in csv_text and "'@Ann" in csv_text  # formulas neutralised for spreadsheets

    from prefect_doccheck.flows import drain_prefect

    drain_prefect()
    api = prefect_server.api_url
    artifacts = eventually(
        lambda: httpx.post(
            f"{api}/artifacts/filter", json={"artifacts": {"key": {"any_": [f"bulk-check-{campaign}-report"]}}}
        ).json(),
        bool,
    )
    links = [a for a in artifacts if "report.html" in str(a.get("data"))]  # Prefect stores a link as markdown
    assert links and (run_dir / "report.html").resolve().as_uri() in links[0]["data"]

    collect = {k: params[k] for k in ("out_dir", "base_url", "database_url")}
    collected = asyncio.run(collect_results(run_id=summary.run_id, download=["similarity_pdf", "pdf"], **collect))
    assert collected.downloads is not None
    assert collected.downloads["downloaded"] == 0 and collected.downloads["reused"] == 4
    assert Path(collected.report_dir or "") != run_dir


def test_bulk_check_states_the_expected_false_flags_from_a_reference_campaign(
    prefect_server: Any, emulator: EmulatorHandle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The AI rules reach the flow's instructor task: the gate, the bands and calibration.json."""
    import json

    monkeypatch.setenv("DOCCHECK_API_KEY", emulator.new_account())
    tag = uuid.uuid4().hex[:8]
    params: dict[str, Any] = dict(
        out_dir=str(tmp_path / "reports"), base_url=emulator.base_url, products=["ai"],
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}", grace_seconds=0, poll_interval=0.1, min_ai_words=20,
    )  # fmt: skip

    def run(campaign: str, rows: list[dict[str, str]], **extra: Any) -> Any:
        manifest = tmp_path / f"{campaign}.csv"
        pd.DataFrame(rows).to_csv(manifest, index=False)
        return asyncio.run(bulk_check(**flow_kwargs(manifest=str(manifest), campaign=campaign, **params, **extra)))

    reference = [{"document_id": f"old-{i}", "text": f"{ESSAY * 3} Essay {i}."} for i in range(3)]
    assert run(f"ref-{tag}", reference).status == "finished"
    cohort = [{"document_id": "long", "text": ESSAY * 3}, {"document_id": "short", "text": "Trees cool streets."}]
    summary = run(f"cohort-{tag}", cohort, reference_campaign=f"ref-{tag}")
    run_dir = Path(summary.report_dir or "")
    calibration = json.loads((run_dir / "calibration.json").read_text())
    assert calibration["reference_campaign"] == f"ref-{tag}" and calibration["reference_documents"] == 3
    assert calibration["judged_documents"] == 1 and calibration["false_flag_rate"] is not None
    rows = pq.read_table(run_dir / "documents.parquet", columns=["document_id", "ai_band"]).to_pylist()
    bands = {r["document_id"]: r["ai_band"] for r in rows}
    assert bands["short"] == "too_short" and bands["long"] in ("low", "elevated", "high")
    page = (run_dir / "report.html").read_text()
    assert "of 3 known-human documents" in page and "under 20 words" in page

    # A collect rewrites the page under the rules the run was judged with (recorded with the run).
    collected = asyncio.run(collect_results(run_id=summary.run_id, out_dir=params["out_dir"],
                                            base_url=emulator.base_url, database_url=params["database_url"]))  # fmt: skip
    again = Path(collected.report_dir or "")
    assert again != run_dir and "under 20 words" in (again / "report.html").read_text()
    assert json.loads((again / "calibration.json").read_text())["reference_campaign"] == f"ref-{tag}"
