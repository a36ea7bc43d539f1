"""``doccheck purge`` on real ledgers (SQLite and PostgreSQL) filled by real runs against the
emulator: a campaign's rows in every table (including a table added later), its webhook
events and report folders go; other campaigns stay; a run purged alone keeps the
submissions its campaign's other runs rely on; dry run first; retention on a schedule.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import text
from typer.testing import CliRunner

import doccheck
from doccheck.cli import app
from doccheck.ledger import Ledger
from doccheck.webhooks import parse_event
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.events import event_body
from tests.fixtures.postgres import ledger_url

pytestmark = pytest.mark.integration
database_url = ledger_url  # each backend in turn

TEXT = ("Rivers carve valleys over thousands of years, and the sediment they carry builds deltas "
        "where they meet the sea. Farmers have relied on those deltas for as long as there were farms.")  # fmt: skip
SIGNATURES_DDL = (
    "CREATE TABLE matching_signatures (id INTEGER PRIMARY KEY, campaign VARCHAR, check_id VARCHAR, sig VARCHAR)"
)


def _run(emulator: EmulatorHandle, key: str, database_url: str, campaign: str, tag: str) -> Any:
    df = pd.DataFrame({"document_id": [f"{tag}-1", f"{tag}-2", f"{tag}-3"],
                       "body": [f"{TEXT} {tag} one.", f"{TEXT} {tag} two.", ""]})  # fmt: skip
    return doccheck.check_dataframe(
        df, text_column="body", products=["ai"], base_url=emulator.base_url, api_key=key, campaign=campaign,
        database_url=database_url, grace_seconds=0, poll_interval=0.2, timeout=60,
    )  # fmt: skip


def _with_reports(ledger: Ledger, run_id: str, root: Path, label: str) -> Path:
    """A report folder for the run, recorded in its summary as the flows do."""
    folder = root / label
    folder.mkdir(parents=True)
    (folder / "submissions.parquet").write_bytes(b"PAR1")
    latest = root / "latest"
    latest.mkdir(exist_ok=True)
    (latest / "submissions.parquet").write_bytes(b"PAR1")
    run = ledger.get_run(run_id)
    assert run is not None
    ledger.finish_run(run_id, summary={**(run.summary or {}), "report_dir": str(folder), "latest_dir": str(latest)})
    return folder


def _counts(ledger: Ledger, campaign: str, run_ids: list[str], check_ids: list[str]) -> dict[str, int]:
    checks = ",".join(f"'{c}'" for c in check_ids) or "''"
    runs = ",".join(f"'{r}'" for r in run_ids) or "''"
    queries = {
        "runs": f"SELECT count(*) FROM runs WHERE campaign = '{campaign}'",
        "documents": f"SELECT count(*) FROM documents WHERE campaign = '{campaign}'",
        "rejections": f"SELECT count(*) FROM rejections WHERE run_id IN ({runs})",
        "submissions": f"SELECT count(*) FROM submissions WHERE campaign = '{campaign}'",
        "outcomes": f"SELECT count(*) FROM outcomes WHERE check_id IN ({checks})",
        "webhook_events": f"SELECT count(*) FROM webhook_events WHERE check_id IN ({checks})",
        "matching_signatures": f"SELECT count(*) FROM matching_signatures WHERE campaign = '{campaign}'",
        "review_dispositions": f"SELECT count(*) FROM review_dispositions WHERE campaign = '{campaign}'",
    }
    with ledger.engine.connect() as conn:
        return {name: conn.execute(text(q)).scalar_one() for name, q in queries.items()}


def _cli(*args: str) -> Any:
    blank = {k: None for k in os.environ if k.startswith("DOCCHECK_")}
    result = CliRunner().invoke(app, list(args), env={**blank, "COLUMNS": "200"})
    assert "Traceback" not in (result.stdout + result.stderr)
    return result


def test_purge_campaign_and_run(emulator: EmulatorHandle, database_url: str, tmp_path: Path) -> None:
    key = emulator.new_account()
    tag = uuid.uuid4().hex[:6]
    gone, kept = f"gone-{tag}", f"kept-{tag}"
    first = _run(emulator, key, database_url, gone, "g")
    second = _run(emulator, key, database_url, gone, "g")  # a rerun: same submissions, no charge
    other = _run(emulator, key, database_url, kept, "k")
    other_again = _run(emulator, key, database_url, kept, "k")
    ledger = Ledger(database_url)
    try:
        with ledger.engine.begin() as conn:
            conn.execute(text(SIGNATURES_DDL))
        gone_checks = [c for c in first.submissions["check_id"] if isinstance(c, str) and c]
        kept_checks = [c for c in other.submissions["check_id"] if isinstance(c, str) and c]
        assert len(gone_checks) == len(kept_checks) == 2
        for i, check_id in enumerate(gone_checks + kept_checks):
            body = event_body(event_id=f"evt_{tag}_{i}", check_id=check_id)
            assert ledger.record_event(parse_event(body), body)
            campaign = gone if check_id in gone_checks else kept
            with ledger.engine.begin() as conn:
                conn.execute(text("INSERT INTO matching_signatures (id, campaign, check_id, sig) VALUES (:i, :c, :k, 'x')"),
                             {"i": i, "c": campaign, "k": check_id})  # fmt: skip
        reports = tmp_path / "reports"
        gone_folder = _with_reports(ledger, second.run_id, reports, f"{gone}-2")
        kept_folder = _with_reports(ledger, other.run_id, reports, f"{kept}-1")
        _with_reports(ledger, first.run_id, reports, f"{gone}-1")
        for campaign, doc in ((gone, "g-1"), (kept, "k-1")):  # a reviewer's decision in each campaign
            review = _cli("review", doc, "--campaign", campaign, "--status", "cleared", "--note", f"note {tag}",
                          "--database-url", database_url)  # fmt: skip
            assert review.exit_code == 0, review.stdout + review.stderr
        gone_runs, kept_runs = [first.run_id, second.run_id], [other.run_id, other_again.run_id]
        before = _counts(ledger, gone, gone_runs, gone_checks)
        assert before == {"runs": 2, "documents": 4, "rejections": 2, "submissions": 2, "outcomes": 2,
                          "webhook_events": 2, "matching_signatures": 2, "review_dispositions": 1}  # fmt: skip
        kept_before = _counts(ledger, kept, kept_runs, kept_checks)

        dry = _cli("purge", "--campaign", gone, "--database-url", database_url)
        assert dry.exit_code == 0, dry.stdout + dry.stderr
        assert "dry run" in dry.stdout and "would remove" in dry.stdout and "matching_signatures" in dry.stdout
        assert _counts(ledger, gone, gone_runs, gone_checks) == before and gone_folder.exists()

        done = _cli("purge", "--campaign", gone, "--database-url", database_url, "--yes")
        assert done.exit_code == 0, done.stdout + done.stderr
        assert "removed" in done.stdout and str(gone_folder) in done.stdout
        assert set(_counts(ledger, gone, gone_runs, gone_checks).values()) == {0}
        assert not gone_folder.exists() and kept_folder.exists()
        assert (reports / "latest").exists()  # the newest run that wrote it (kept's) stays
        assert _counts(ledger, kept, kept_runs, kept_checks) == kept_before

        # one run alone: its documents and rejections go; the shared submissions stay
        single = _cli("purge", "--run-id", other.run_id, "--database-url", database_url, "--yes")
        assert single.exit_code == 0, single.stdout
        after = _counts(ledger, kept, kept_runs, kept_checks)
        assert after["runs"] == 1 and after["documents"] == 2 and after["rejections"] == 1
        assert after["submissions"] == 2 and after["outcomes"] == 2 and after["matching_signatures"] == 2
        assert after["review_dispositions"] == 1  # about a version the campaign's other run still has
        assert not kept_folder.exists() and not (reports / "latest").exists()  # its newest writer went
        rerun = _run(emulator, key, database_url, kept, "k")
        assert rerun.summary["submitted"] == 0 and rerun.summary["spent_cents"] == 0  # still free
    finally:
        ledger.close()


def test_refusals_are_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    Ledger(url).close()
    nothing = _cli("purge", "--database-url", url)
    assert nothing.exit_code == 2 and "refusing to purge everything" in nothing.stderr
    unknown = _cli("purge", "--run-id", "nope", "--database-url", url)
    assert unknown.exit_code == 2 and "no such run" in unknown.stderr
    bad_age = _cli("purge", "--older-than", "soon", "--database-url", url)
    assert bad_age.exit_code == 2 and "--older-than" in bad_age.stderr
    no_days = _cli("purge", "--retention", "--database-url", url)
    assert no_days.exit_code == 2 and "DOCCHECK_RETENTION_DAYS" in no_days.stderr


def test_retention_on_a_schedule(emulator: EmulatorHandle, tmp_path: Path) -> None:
    """The scheduled form, as cron runs it: a subprocess with DOCCHECK_RETENTION_DAYS."""
    database_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    key = emulator.new_account()
    result = _run(emulator, key, database_url, f"ret-{uuid.uuid4().hex[:6]}", "r")
    ledger = Ledger(database_url)
    try:
        check_id = next(c for c in result.submissions["check_id"] if isinstance(c, str) and c)
        applied, unapplied = event_body(event_id="evt_a", check_id=check_id), event_body(event_id="evt_b", check_id="x")
        ledger.record_event(parse_event(applied), applied)
        ledger.apply_pending_events()
        ledger.record_event(parse_event(unapplied), unapplied)
        assert [e.payload for e in ledger.events(check_id)] == [{}]  # dropped once applied
        with ledger.engine.begin() as conn:  # what an older doccheck left behind (the table is no longer created)
            conn.execute(text("CREATE TABLE webhook_secrets (scope VARCHAR(200) PRIMARY KEY, secret VARCHAR NOT NULL)"))
            conn.execute(
                text("INSERT INTO webhook_secrets (scope, secret) VALUES ('default', 'whsec_legacy_plaintext')")
            )
    finally:
        ledger.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    cmd = [sys.executable, "-m", "doccheck.cli", "purge", "--retention", "--database-url", database_url]

    keep = subprocess.run([*cmd, "--yes"], env={**env, "DOCCHECK_RETENTION_DAYS": "30", "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert keep.returncode == 0, keep.stderr
    assert "legacy plain-text secrets in the ledger removed: 1" in keep.stdout
    ledger = Ledger(database_url)
    try:
        assert ledger.get_run(result.run_id) is not None  # younger than 30 days: kept
        with ledger.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM webhook_secrets")).scalar_one() == 0
    finally:
        ledger.close()

    dry = subprocess.run(cmd, env={**env, "DOCCHECK_RETENTION_DAYS": "0", "COLUMNS": "200"},
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert dry.returncode == 0 and "would remove" in dry.stdout, dry.stderr
    purge = subprocess.run([*cmd, "--yes"], env={**env, "DOCCHECK_RETENTION_DAYS": "0", "COLUMNS": "200"},
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert purge.returncode == 0, purge.stderr
    assert "Traceback" not in purge.stdout + purge.stderr
    ledger = Ledger(database_url)
    try:
        assert ledger.get_run(result.run_id) is None
        # within the retry window (issue 39) the event ids stay, bodiless, so a redelivery is a duplicate
        assert [(e.event_id, e.payload) for e in ledger.events()] == [("evt_a", {}), ("evt_b", {})]
    finally:
        ledger.close()
