"""A ``bulk_check`` flow killed between the service's answer and the ledger write resumes,
on a plain rerun of the same flow, without a second check or a second charge.

The kill is real: a subprocess runs the flow with ``Ledger.mark_submitted`` patched to
``os._exit`` on its second call (the check exists at the service, the ledger still says
``submitting``). The rerun in this process must replay that key (the service answers with
the original check, no charge) and finish the run.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from doccheck.pipeline import RunOptions
from prefect_doccheck.flows.bulk_check import bulk_check
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

CRASHING_RUN = textwrap.dedent(
    """
    import asyncio, os, sys
    from doccheck.ledger import Ledger

    original = Ledger.mark_submitted
    calls = {"n": 0}

    def crashing(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            os._exit(17)  # the service created the check; the ledger never hears of it
        return original(self, *args, **kwargs)

    Ledger.mark_submitted = crashing
    import doccheck.ledger as bulk  # the answers' rounds, read here when a batch starts: the same crash point
    original_round = bulk.record_answers_and_claims  # a round: answers + next claims, one transaction

    def crashing_round(ledger, items):
        for item in items:
            if isinstance(item, bulk.Answer):
                calls["n"] += 1
                if calls["n"] == 2:
                    os._exit(17)
        return original_round(ledger, items)

    bulk.record_answers_and_claims = crashing_round
    from doccheck.pipeline import RunOptions
    from prefect_doccheck.flows.bulk_check import bulk_check

    manifest, out_dir, base_url, db_url = sys.argv[1:5]
    asyncio.run(bulk_check(**RunOptions.from_flat(manifest=manifest, out_dir=out_dir, campaign="resume", base_url=base_url,
                           database_url=db_url, concurrency=1, wait=False).flow_parameters()))
    """
)


def test_killed_between_answer_and_ledger_write_resumes_without_second_charge(
    prefect_server: Any, emulator: EmulatorHandle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = emulator.new_account()
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    manifest = tmp_path / "resume.csv"
    pd.DataFrame(
        [
            {"document_id": f"r-{i}", "text": f"Essay number {i} on water, heat and shade in cities. " * (10 + i)}
            for i in range(3)
        ]
    ).to_csv(manifest, index=False)
    db_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    args = [str(manifest), str(tmp_path / "reports"), emulator.base_url, db_url]

    script = tmp_path / "crashing_run.py"
    script.write_text(CRASHING_RUN)
    crashed = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert crashed.returncode == 17, crashed.stderr
    at_crash = emulator.account_state(key)
    assert at_crash["checks"] == 2  # the second check exists, the ledger does not know it

    summary = asyncio.run(
        bulk_check(**RunOptions.from_flat(
            manifest=str(manifest), out_dir=str(tmp_path / "reports"), campaign="resume",
            base_url=emulator.base_url, database_url=db_url, concurrency=1,
            grace_seconds=0, poll_interval=0.1, wait_timeout=30,
        ).flow_parameters())
    )  # fmt: skip
    after = emulator.account_state(key)
    assert after["checks"] == 3  # only the document never sent is new
    assert summary.submitted == 1 and summary.reused == 2
    assert summary.status == "finished" and summary.products == {"ai": {"completed": 3}}
    # Only the new document was charged by the resume.
    assert after["charged_cents"] - at_crash["charged_cents"] == summary.spent_cents
    subs = pd.read_parquet(tmp_path / "reports" / "latest" / "submissions.parquet")
    assert (subs["status"] == "submitted").all() and subs["check_id"].is_unique
    assert int(subs["cost_cents"].sum()) == after["charged_cents"]
