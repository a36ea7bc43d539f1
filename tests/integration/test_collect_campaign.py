"""``doccheck collect --campaign X`` covers every pending product of the campaign, across
runs (issue 8, defect 6): two runs leave their products processing; one collect by
campaign finishes both, rewrites both runs' reports, and prints neither "words 0" nor
"estimated cost $0.00" (defect 8)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import load_plan, submit_batch
from tests.factories import essay_manifest
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]


async def _submit_only(emu: EmulatorHandle, key: str, ledger: Ledger, manifest: Path, campaign: str) -> str:
    plan = load_plan(manifest, campaign=campaign, products="ai,similarity")
    run_id = ledger.start_run(campaign=campaign, manifest=str(manifest), products=["ai", "similarity"])
    async with AsyncDocCheckClient(emu.base_url, key) as client:
        result = await submit_batch(client, ledger, run_id, plan.documents)
    assert result.submitted == len(plan.documents)
    ledger.finish_run(run_id, status="submitted")
    return run_id


def test_collect_by_campaign_finishes_every_run(
    prefect_server: object, isolated_emulator: EmulatorHandle, tmp_path: Path
) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    campaign = f"collect-{uuid.uuid4().hex[:8]}"
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(db)
    emu.set_faults(processing_seconds=3600)  # nothing finishes while the runs are alive
    try:
        first = asyncio.run(_submit_only(emu, key, ledger, essay_manifest(tmp_path, "week1", 0, 4), campaign))
        second = asyncio.run(_submit_only(emu, key, ledger, essay_manifest(tmp_path, "week2", 4, 3), campaign))
    finally:
        emu.reset_faults()
    assert ledger.outcome_counts(run_id=first)["pending"] == 8
    assert ledger.outcome_counts(run_id=second)["pending"] == 6
    emu.advance(3601)  # now every product has finished at the service

    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    env.update(DOCCHECK_BASE_URL=emu.base_url, DOCCHECK_API_KEY=key, DOCCHECK_DATABASE_URL=db, COLUMNS="200")
    out = subprocess.run(
        [sys.executable, "-m", "doccheck.cli", "collect", "--campaign", campaign, "--out", str(tmp_path / "out")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert ledger.outcome_counts(campaign=campaign) == {"total": 14, "completed": 14, "failed": 0, "pending": 0}
    assert "finished" in out.stdout and "runs collected" in out.stdout
    assert re.search(r"words\s*│\s*[1-9]", out.stdout) and "$0.00" not in out.stdout, out.stdout

    folders = {p.name: p for p in (tmp_path / "out").iterdir() if p.name not in ("latest", "tables", "catalog.duckdb")}
    assert any(first[:8] in name for name in folders) and any(second[:8] in name for name in folders)
    for folder in folders.values():
        ai = pq.read_table(folder / "ai_results.parquet").to_pandas()
        assert (ai["status"] == "completed").all() and len(ai) in (3, 4)
    latest = pq.read_table(tmp_path / "out" / "latest" / "submissions.parquet").to_pandas()
    assert sorted(latest["document_id"]) == ["d4", "d5", "d6"]  # latest/ is the latest run's
    ledger.close()
