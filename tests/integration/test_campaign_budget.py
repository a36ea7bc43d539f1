"""The budget belongs to the campaign (issue 8, defect 7): two ``doccheck run`` processes
of one campaign, each with ``--max-spend-cents 500``, on one ledger, spend at most 500
cents together in the service's own books. On SQLite and on PostgreSQL.

Each process runs half of the corpus (different keys), so what holds the total is the
campaign's row in the ledger, not the idempotency of shared keys; together the halves
would cost about twice the cap.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from doccheck.ledger import Ledger, budget_state
from doccheck.pipeline import load_plan
from tests.factories import essay_manifest
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

CAP = 500


def test_two_concurrent_runs_share_one_campaign_budget(
    prefect_server: object, isolated_emulator: EmulatorHandle, ledger_url: str, tmp_path: Path
) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    campaign = f"budget-{uuid.uuid4().hex[:8]}"
    halves = [essay_manifest(tmp_path, "a", 0, 85), essay_manifest(tmp_path, "b", 85, 85)]
    estimates = [load_plan(h, campaign=campaign, products="ai,similarity").estimated_cost_cents() for h in halves]
    assert all(e > CAP for e in estimates), estimates  # each half alone would take the whole cap
    Ledger(ledger_url).close()  # the schema exists before two processes race to create it
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    env.update(DOCCHECK_BASE_URL=emu.base_url, DOCCHECK_API_KEY=key, DOCCHECK_DATABASE_URL=ledger_url, COLUMNS="200")
    emu.set_faults(latency_ms=30)  # both runs are surely sending at the same time
    try:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "doccheck.cli",
                    "run",
                    str(h),
                    "--campaign",
                    campaign,
                    "--products",
                    "ai,similarity",
                    "--max-spend-cents",
                    str(CAP),
                    "--no-wait",
                    "--no-progress",
                    "--concurrency",
                    "8",
                    "--out",
                    str(tmp_path / f"out-{h.stem}"),
                ],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for h in halves
        ]
        outs = [p.communicate(timeout=240) for p in procs]
    finally:
        emu.reset_faults()
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, (out, err)
    account = emu.account_state(key)
    assert CAP - 10 <= account["charged_cents"] <= CAP, account  # the cap is used, never exceeded
    ledger = Ledger(ledger_url)
    try:
        state = budget_state(ledger, campaign)
        assert state.spent_cents == account["charged_cents"] and state.reserved_cents == 0 and state.holds == 0
    finally:
        ledger.close()
    assert sum("left unsent (budget)" in out for out, _ in outs) >= 1
