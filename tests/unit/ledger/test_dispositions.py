"""Review dispositions: recorded in the ledger, shown in the files, kept across reruns, purged (issue 25)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from doccheck.cli import app
from doccheck.errors import DispositionError
from doccheck.ledger import Ledger
from doccheck.ledger._data_purge import execute_purge, plan_purge
from doccheck.ledger._tables import DocumentRow
from doccheck.outputs import ReportTables, write_reports
from doccheck.outputs.instructor import write_instructor_files

NOTE = "Talked to the student 2026-11-20; drafts in the LMS history match. UNIQUE-NOTE-7f3a"


def _document(ledger: Ledger, run_id: str, doc: str, content_hash: str, campaign: str = "course") -> None:
    with ledger.session() as s:
        s.add(DocumentRow(run_id=run_id, campaign=campaign, document_id=doc, content_hash=content_hash,
                          idempotency_key=f"key-{campaign}-{content_hash}"))  # fmt: skip


def _tables(*docs: str) -> ReportTables:
    subs = [{"document_id": d, "row_number": i, "mode": "text", "check_id": f"chk_{d}", "products": ["ai"],
             "status": "submitted", "words": 500, "cost_cents": 1} for i, d in enumerate(docs, start=1)]  # fmt: skip
    ai = [{"document_id": d, "check_id": f"chk_{d}", "status": "completed", "score": 0.93, "label": "ai",
           "words": 500} for d in docs]  # fmt: skip
    return ReportTables(submissions=subs, ai_results=ai)


def test_set_replaces_and_rejects_bad_input(ledger: Ledger) -> None:
    _document(ledger, "r1", "s1", "h1")
    with pytest.raises(DispositionError, match="status must be one of cleared, discussed, referred"):
        ledger.set_disposition("course", "s1", "ok")
    with pytest.raises(DispositionError, match="campaign 'course' has no document 'nobody'"):
        ledger.set_disposition("course", "nobody", "cleared")
    ledger.set_disposition("course", "s1", "discussed", note="first look", decided_by="ana")
    ledger.set_disposition("course", "s1", "cleared", note=NOTE, decided_by="ben")
    decided = ledger.dispositions_of_run("r1")
    assert list(decided) == ["s1"]
    assert (decided["s1"].status, decided["s1"].note, decided["s1"].decided_by) == ("cleared", NOTE, "ben")
    assert decided["s1"].current is True
    assert ledger.dispositions_of_run("r1", []) == {} and ledger.dispositions_of_run("r1", ["s2"]) == {}


def test_any_for_run_is_about_the_runs_campaign(ledger: Ledger) -> None:
    _document(ledger, "r1", "s1", "h1")
    _document(ledger, "r2", "s1", "h1", campaign="other")
    assert not ledger.has_dispositions("r1") and not ledger.has_dispositions("r2")
    ledger.set_disposition("course", "s1", "discussed")
    assert ledger.has_dispositions("r1")
    assert not ledger.has_dispositions("r2") and not ledger.has_dispositions("no-such-run")


def test_a_cleared_flag_survives_a_rerun_unless_the_document_changed(ledger: Ledger, tmp_path: Path) -> None:
    _document(ledger, "r1", "same", "h-same")
    _document(ledger, "r1", "changed", "h-old")
    _document(ledger, "r1", "referred", "h-ref")
    for doc in ("same", "changed"):
        ledger.set_disposition("course", doc, "cleared", note=NOTE, decided_by="ana")
    ledger.set_disposition("course", "referred", "referred", note="to the panel")
    # the next run: same content for two, a new version of "changed"
    _document(ledger, "r2", "same", "h-same")
    _document(ledger, "r2", "changed", "h-new")
    _document(ledger, "r2", "referred", "h-ref")
    paths = write_reports(tmp_path, "run-2", _tables("same", "changed", "referred"))
    written = write_instructor_files(paths.run_dir, None, campaign="course", run_id="r2",
                                     dispositions_of=lambda ids: ledger.dispositions_of_run("r2", ids))  # fmt: skip
    rows = {r["document_id"]: r for r in pq.read_table(written.documents_parquet).to_pylist()}
    assert rows["same"]["review_status"] == "cleared" and rows["same"]["review_current"] is True
    assert rows["same"]["flagged"] is False and rows["same"]["review_note"] == NOTE
    assert rows["changed"]["review_current"] is False and rows["changed"]["flagged"] is True  # raised again
    assert rows["referred"]["flagged"] is True and rows["referred"]["review_status"] == "referred"
    csv_rows = {r["document_id"]: r for r in csv.DictReader(io.StringIO(written.documents_csv.read_text("utf-8-sig")))}
    assert csv_rows["same"]["review_status"] == "cleared" and csv_rows["same"]["reviewed_by"] == "ana"
    page = written.report_html.read_text()
    assert "cleared (earlier version)" in page and "UNIQUE-NOTE-7f3a" in page and "to the panel" in page


def test_review_command_records_and_refuses(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'review.db'}"
    ledger = Ledger(url)
    _document(ledger, "r1", "s1", "h1")
    runner = CliRunner()
    bad = runner.invoke(app, ["review", "s1", "--campaign", "course", "--status", "fine", "--database-url", url])
    assert bad.exit_code == 2 and "status must be one of" in bad.stderr
    ok = runner.invoke(app, ["review", "s1", "--campaign", "course", "--status", "cleared", "--note", NOTE,
                             "--by", "ana", "--database-url", url])  # fmt: skip
    assert ok.exit_code == 0, ok.stdout + ok.stderr
    assert "'s1' in 'course': cleared by ana" in ok.stdout
    assert ledger.dispositions_of_run("r1")["s1"].note == NOTE
    ledger.close()


def test_purge_removes_dispositions_and_leaves_no_note_in_the_file(tmp_path: Path) -> None:
    db = tmp_path / "purge.db"
    ledger = Ledger(f"sqlite:///{db}")
    _document(ledger, "r1", "s1", "h1")
    _document(ledger, "r9", "k1", "h9", campaign="kept")
    from doccheck.ledger._tables import RunRow

    with ledger.session() as s:
        s.add(RunRow(id="r1", campaign="course"))
        s.add(RunRow(id="r9", campaign="kept"))
    ledger.set_disposition("course", "s1", "cleared", note=NOTE)
    ledger.set_disposition("kept", "k1", "discussed", note="kept note")
    plan = plan_purge(ledger.engine, campaigns=["course"])
    assert plan.rows.get("review_dispositions") == 1
    execute_purge(ledger.engine, plan)
    assert ledger.dispositions_of_run("r1") == {}
    assert ledger.dispositions_of_run("r9")["k1"].note == "kept note"
    ledger.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("purge.db*"))
    assert b"UNIQUE-NOTE-7f3a" not in raw and b"kept note" in raw


def test_notebook_set_disposition_uses_the_same_table(tmp_path: Path) -> None:
    from doccheck.notebook import set_disposition

    url = f"sqlite:///{tmp_path / 'nb.db'}"
    ledger = Ledger(url)
    _document(ledger, "r1", "s1", "h1")
    decided = set_disposition("course", "s1", "discussed", note="met on Friday", decided_by="ana", database_url=url)
    assert decided.status == "discussed" and ledger.dispositions_of_run("r1")["s1"].note == "met on Friday"
    with pytest.raises(DispositionError):
        set_disposition("course", "s1", "maybe", database_url=url)
    ledger.close()
