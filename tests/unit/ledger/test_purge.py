"""doccheck.ledger._data_purge without a service: selection by age, folder safety."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from doccheck.errors import PurgeError
from doccheck.ledger import Ledger
from doccheck.ledger._data_purge import execute_purge, plan_purge


def test_age_selection_and_folder_safety(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    try:
        old = ledger.start_run(campaign="c")
        new = ledger.start_run(campaign="c")
        with ledger.engine.begin() as conn:
            conn.execute(text("UPDATE runs SET started_at = :t WHERE id = :i"),
                         {"t": datetime.now(UTC) - timedelta(days=40), "i": old})  # fmt: skip
        precious = tmp_path / "reports-old"
        precious.mkdir()
        (precious / "submissions.parquet").write_bytes(b"x")
        (precious / "thesis.docx").write_bytes(b"not ours")
        ledger.finish_run(old, summary={"report_dir": str(precious)})

        plan = plan_purge(ledger.engine, older_than=timedelta(days=30))
        assert plan.run_ids == [old] and plan.partial_campaigns == ["c"] and plan.whole_campaigns == []
        assert plan.folders == [] and "thesis.docx" in plan.skipped_folders[str(precious)]
        result = execute_purge(ledger.engine, plan)
        assert result.rows["runs"] == 1 and ledger.get_run(old) is None and ledger.get_run(new) is not None
        assert (precious / "thesis.docx").exists()
        with pytest.raises(PurgeError, match="refusing"):
            plan_purge(ledger.engine)
    finally:
        ledger.close()


def test_unknown_check_bodies_are_emptied_after_a_week(tmp_path: Path) -> None:
    from doccheck.ledger._data_purge import UNKNOWN_BODY_TTL, drop_event_bodies

    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    try:
        now = datetime.now(UTC)
        with ledger.engine.begin() as conn:
            for event_id, age in (("fresh", timedelta(hours=1)), ("stale", UNKNOWN_BODY_TTL + timedelta(hours=1))):
                conn.execute(
                    text("INSERT INTO webhook_events (event_id, type, check_id, received_at, payload, applied) "
                         "VALUES (:e, 'check.completed', 'chk_nobody', :t, :p, 0)"),
                    {"e": event_id, "t": now - age, "p": '{"metadata": {"student": "Ottoline"}}'},
                )  # fmt: skip
        assert drop_event_bodies(ledger.engine, apply=False) == (1, 0)
        assert drop_event_bodies(ledger.engine) == (1, 0)
        with ledger.engine.connect() as conn:
            rows = dict(conn.execute(text("SELECT event_id, payload FROM webhook_events")).all())
        assert "Ottoline" in rows["fresh"] and "Ottoline" not in rows["stale"]
    finally:
        ledger.close()


def test_a_run_folder_with_group_pages_is_a_report_folder(tmp_path: Path) -> None:
    from doccheck.ledger._data_purge import _report_folder_problem

    folder = tmp_path / "c-20261125T101010123Z-abcd1234"
    (folder / "groups").mkdir(parents=True)
    (folder / "groups" / "section-a.html").write_text("<p>Ada</p>")
    (folder / "report.html").write_text("<p>groups</p>")
    assert _report_folder_problem(folder) is None  # --group-by pages go with the run
    (folder / "groups" / "nested").mkdir()
    assert _report_folder_problem(folder) is not None


def test_event_ids_outlive_a_purge_for_the_retry_window(tmp_path: Path) -> None:
    """Issue 39: a campaign purge and a 1-day retention empty event bodies, but an id received
    within the retry window (3 days by default) is kept: its redelivery stays a duplicate."""
    from doccheck.config import Settings
    from doccheck.ledger._data_purge import drop_event_bodies
    from tests.factories import planned, record
    from tests.fixtures.events import event_body
    from tests.unit.ledger.test_ledger import submit

    assert Settings().webhook.event_window_days >= 3
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    try:
        run_id = ledger.start_run(campaign="c")
        submit(ledger, run_id, planned("d1"), "chk-1")
        assert record(ledger, event_body("evt-new", "chk-1", "ai"))
        assert record(ledger, event_body("evt-old", "chk-1", "ai"))
        with ledger.engine.begin() as conn:
            conn.execute(text("UPDATE webhook_events SET received_at = :t WHERE event_id = 'evt-old'"),
                         {"t": datetime.now(UTC) - timedelta(days=4)})  # fmt: skip
        ledger.apply_pending_events()
        assert drop_event_bodies(ledger.engine, older_than=timedelta(days=1)) == (0, 1)  # only the 4-day-old
        result = execute_purge(ledger.engine, plan_purge(ledger.engine, campaigns=["c"]))
        assert result.rows["webhook_events"] == 0  # emptied and unlinked, not deleted
        with ledger.engine.connect() as conn:
            [(event_id, check_id, payload)] = conn.execute(
                text("SELECT event_id, check_id, payload FROM webhook_events")
            ).all()
        assert (event_id, check_id, payload) == ("evt-new", None, "{}")
        assert not record(ledger, event_body("evt-new", "chk-1", "ai"))  # a redelivery: still a duplicate
        assert ledger.apply_pending_events() == 0  # nothing recreated for the purged check
    finally:
        ledger.close()


def test_a_campaigns_folders_on_a_store_are_removed_object_by_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--out s3://…``: the recorded run folder, a folder a killed publish left without its run.json
    (found by its name), ``latest/`` and what a killed run left in the local scratch folder go; another
    campaign's folder and a prefix holding a user's own file stay (fsspec's memory filesystem stands
    for the bucket)."""
    import tempfile

    from fsspec.implementations.memory import MemoryFileSystem

    from doccheck.storage import files_under, resolve, scratch_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the scratch folder: the test's own
    MemoryFileSystem.store.clear()
    out = "memory://term/reports"
    objects = {
        "hist-20261125T101010123Z-aaaaaaaa/run.json": b"{}",
        "hist-20261125T101010123Z-aaaaaaaa/documents.parquet": b"Ada",
        "hist-20261125T101010123Z-aaaaaaaa/files/d1.pdf.pdf": b"%PDF Ada",
        "hist-20261126T101010123Z-bbbbbbbb/documents.parquet": b"Ada, half published",
        "latest/run.json": b"{}",
        "latest/report.html": b"Ada",
        "geo-20261125T101010123Z-cccccccc/run.json": b"{}",
        "hist-20261127T101010123Z-dddddddd/thesis.docx": b"not ours",
    }
    for name, data in objects.items():
        resolve(f"{out}/{name}").write_bytes(data)
    leftover = scratch_folder(resolve(out)) / ".hist-20261128T101010123Z-eeeeeeee.partial"
    leftover.mkdir(parents=True)
    (leftover / "documents.parquet").write_bytes(b"Ada")
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    try:
        for run_id in ("aaaaaaaa-1", "bbbbbbbb-2", "dddddddd-4", "eeeeeeee-5"):
            ledger.start_run(campaign="hist", run_id=run_id)
        ledger.finish_run("aaaaaaaa-1", summary={"report_dir": f"{out}/hist-20261125T101010123Z-aaaaaaaa",
                                                 "latest_dir": f"{out}/latest"})  # fmt: skip
        other = ledger.start_run(campaign="geo", run_id="cccccccc-3")
        ledger.finish_run(other, summary={"report_dir": f"{out}/geo-20261125T101010123Z-cccccccc"})
        plan = plan_purge(ledger.engine, campaigns=["hist"])
        assert sorted(str(f).rsplit("/", 1)[-1] for f in plan.folders) == [
            ".hist-20261128T101010123Z-eeeeeeee.partial",
            "hist-20261125T101010123Z-aaaaaaaa",
            "hist-20261126T101010123Z-bbbbbbbb",
            "latest",
        ]
        assert "thesis.docx" in plan.skipped_folders[f"{out}/hist-20261127T101010123Z-dddddddd"]
        execute_purge(ledger.engine, plan)
        assert sorted(files_under(resolve(out))) == [
            "geo-20261125T101010123Z-cccccccc/run.json",
            "hist-20261127T101010123Z-dddddddd/thesis.docx",
        ]
        assert not leftover.exists()
    finally:
        ledger.close()
        MemoryFileSystem.store.clear()


def test_the_purged_checks_downloaded_files_are_removed_from_the_cache(tmp_path: Path) -> None:
    """``<out>/.files-cache`` keeps what ``--download`` fetched (an original is the student's own
    document): the purged checks' files go, a download cut short with them; other checks' stay."""
    from doccheck.guards import safe_file_stem
    from doccheck.ledger._purge_residue import cached_files

    cache = tmp_path / "out" / ".files-cache"
    cache.mkdir(parents=True)
    gone = ["chk.1.original.html.txt", "chk.1.pdf.pdf", ".chk.1.similarity_pdf.download",
            f"{safe_file_stem('odd/id')}.original.docx"]  # fmt: skip
    kept = ["chk.10.original.pdf", "chk.1x.pdf.pdf", "chk.1.original.a.b.c", "other.similarity_pdf.pdf"]
    for name in gone + kept:
        (cache / name).write_bytes(b"a student's words")
    found = cached_files([tmp_path / "out", tmp_path / "missing"], ["chk.1", "odd/id"])
    assert sorted(p.name for p in found) == sorted(gone)
