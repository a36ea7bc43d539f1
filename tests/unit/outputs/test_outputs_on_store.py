"""A run's reports at a URL (fsspec's memory filesystem standing for a bucket): every run folder,
``latest/``, ``tables/`` and the catalog written there; a run folder counted by the run listings,
``latest/`` and the catalog only once its ``run.json`` is put; a publish killed midway leaves no
run visible and its retry completes it; the catalog from the store answers over two runs."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from doccheck.outputs._parquet_reports import ReportPaths, ReportTables, run_label, write_reports
from doccheck.outputs._term_catalog import connect, run_entries
from doccheck.outputs.instructor._run_outputs import write_run_outputs
from doccheck.storage import files_under, resolve

OUT = "memory://term/reports"
T0 = datetime(2026, 9, 1, tzinfo=UTC)


@pytest.fixture
def memory(
    memory_store: MemoryFileSystem, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MemoryFileSystem]:
    """An empty store, and a temporary directory of the test's own (where folders are built)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    yield memory_store


def _tables(n: int, run: str) -> ReportTables:
    return ReportTables(
        submissions=[
            {
                "document_id": f"d{i}",
                "status": "submitted",
                "check_id": f"{run}-c{i}",
                "net_cents": 10,
                "charged_cents": 10,
                "cost_cents": 10,
            }
            for i in range(n)
        ],  # fmt: skip
        ai_results=[
            {"document_id": f"d{i}", "check_id": f"{run}-c{i}", "status": "completed", "score": 0.1} for i in range(n)
        ],  # fmt: skip
    )


def _write(run_id: str, n: int, day: int, campaign: str = "course-a") -> ReportPaths:
    """Run ``run_id``'s reports written as a run writes them: staged, then the page, published."""
    label = run_label(campaign, run_id, T0 + timedelta(days=day))
    paths = write_reports(OUT, label, _tables(n, run_id), staged=True)
    asyncio.run(write_run_outputs(paths.run_dir, paths.latest_dir, campaign=campaign, run_id=run_id))
    return paths


def _objects() -> dict[str, int]:
    return {name: entry.size for name, entry in files_under(resolve(OUT)).items()}


def test_the_reports_latest_tables_and_catalog_are_written_to_the_store(memory: MemoryFileSystem) -> None:
    first = _write("aaaaaaaa-1", 2, 0)
    second = _write("bbbbbbbb-2", 3, 7)
    objects = _objects()
    for folder in (first.run_dir.name, second.run_dir.name):
        for name in ("run.json", "report.html", "documents.parquet", "documents.csv", "submissions.parquet"):
            assert f"{folder}/{name}" in objects
    assert "latest/report.html" in objects and "catalog.duckdb" in objects
    assert resolve(f"{OUT}/latest/run.json").read_text().count("bbbbbbbb-2") == 1  # latest is the second run's
    assert "tables/documents/campaign=course-a/run=aaaaaaaa-1/documents.parquet" in objects
    assert [e.run_id for e in run_entries(OUT)] == ["aaaaaaaa-1", "bbbbbbbb-2"]
    assert not [p for p in Path(tempfile.gettempdir()).rglob("*") if p.is_dir() and ".partial" in p.name]

    con = connect(OUT)  # the store's catalog, its views reading the store
    assert con.execute("SELECT run_id, documents FROM runs ORDER BY started_at").fetchall() == [
        ("aaaaaaaa-1", 2),
        ("bbbbbbbb-2", 3),
    ]
    assert con.execute("SELECT count(*), sum(net_cents) FROM submissions").fetchall() == [(5, 50)]
    assert con.execute("SELECT count(*) FROM ai_results WHERE run_id = 'bbbbbbbb-2'").fetchall() == [(3,)]


def test_a_run_folder_counts_only_once_its_run_json_is_there(memory: MemoryFileSystem) -> None:
    _write("aaaaaaaa-1", 2, 0)
    seen: list[tuple[str, list[str], str]] = []
    original = memory.put_file

    def looking(lpath: str, rpath: str, **kw: object) -> object:
        latest = resolve(f"{OUT}/latest/run.json")
        seen.append((rpath, [e.run_id for e in run_entries(OUT)], latest.read_text() if latest.exists() else ""))
        return original(lpath, rpath, **kw)

    memory.put_file = looking  # type: ignore[method-assign]
    try:
        second = _write("bbbbbbbb-2", 3, 7)
    finally:
        del memory.put_file
    marker = next(i for i, (rpath, _, _) in enumerate(seen) if rpath.endswith(f"{second.run_dir.name}/run.json"))
    assert all(runs == ["aaaaaaaa-1"] for _, runs, _ in seen[: marker + 1])  # not before its run.json
    assert seen[marker + 1][1] == ["aaaaaaaa-1", "bbbbbbbb-2"]
    # latest/ shows the first run, then nothing (its run.json out first), then the second run, whole
    states = [("bbbbbbbb-2" in text, "aaaaaaaa-1" in text) for _, _, text in seen]
    assert states[0] == (False, True) and states[-1] == (True, False) and not any(a and b for a, b in states)
    assert connect(OUT).execute("SELECT count(*) FROM runs").fetchall() == [(2,)]


def test_a_publish_killed_midway_leaves_no_run_and_its_retry_completes_it(memory: MemoryFileSystem) -> None:
    _write("aaaaaaaa-1", 2, 0)
    label = run_label("course-a", "bbbbbbbb-2", T0 + timedelta(days=7))
    paths = write_reports(OUT, label, _tables(3, "bbbbbbbb-2"), staged=True)
    original, puts = memory.put_file, []

    def dies_after_three(lpath: str, rpath: str, **kw: object) -> object:
        if len(puts) == 3:
            raise ConnectionError("the process was killed here")
        puts.append(rpath)
        return original(lpath, rpath, **kw)

    memory.put_file = dies_after_three  # type: ignore[method-assign]
    try:
        with pytest.raises(ConnectionError):
            asyncio.run(write_run_outputs(paths.run_dir, paths.latest_dir, campaign="course-a", run_id="bbbbbbbb-2"))
    finally:
        del memory.put_file
    assert len([n for n in _objects() if n.startswith(f"{label}/")]) == 3  # half a folder: no run.json
    assert [e.run_id for e in run_entries(OUT)] == ["aaaaaaaa-1"]
    assert "aaaaaaaa-1" in resolve(f"{OUT}/latest/run.json").read_text()
    assert connect(OUT).execute("SELECT run_id FROM runs").fetchall() == [("aaaaaaaa-1",)]

    # the task's retry (same process: the folder built on the local disk is still there) completes it
    asyncio.run(write_run_outputs(paths.run_dir, paths.latest_dir, campaign="course-a", run_id="bbbbbbbb-2"))
    assert [e.run_id for e in run_entries(OUT)] == ["aaaaaaaa-1", "bbbbbbbb-2"]
    assert f"{label}/report.html" in _objects()
    assert connect(OUT).execute("SELECT count(*) FROM submissions").fetchall() == [(5,)]


def test_a_published_folder_is_written_again_whole(memory: MemoryFileSystem) -> None:
    """The instructor's files written again over a published folder (no staged copy left: another
    process): the folder is copied back, rewritten and published again, its run.json still there."""
    from doccheck.outputs.instructor._instructor_files import write_instructor_files

    paths = _write("aaaaaaaa-1", 2, 0)
    before = _objects()
    write_instructor_files(paths.run_dir, paths.latest_dir, campaign="course-a", run_id="aaaaaaaa-1")
    assert set(_objects()) == set(before)
    assert [e.run_id for e in run_entries(OUT)] == ["aaaaaaaa-1"]


def test_a_purge_removes_the_campaigns_objects_and_the_catalog_forgets_them(
    memory: MemoryFileSystem, tmp_path: Path
) -> None:
    """As ``doccheck purge --campaign course-a --yes`` does: the ledger's plan, then the catalogs of
    the folders it removed rebuilt (their ``tables/`` copies go with them)."""
    from doccheck.ledger import Ledger, execute_purge, plan_purge
    from doccheck.outputs._term_catalog import rebuild_catalogs
    from doccheck.storage import display

    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    try:
        for run_id, day, campaign in (("aaaaaaaa-1", 0, "course-a"), ("bbbbbbbb-2", 1, "course-b"),
                                      ("cccccccc-3", 7, "course-a")):  # fmt: skip
            ledger.start_run(campaign=campaign, run_id=run_id)
            paths = _write(run_id, 2, day, campaign)
            ledger.finish_run(run_id, summary={"report_dir": display(paths.run_dir),
                                               "latest_dir": display(paths.latest_dir)})  # fmt: skip
        done = execute_purge(ledger.engine, plan_purge(ledger.engine, campaigns=["course-a"]))
        rebuilt = rebuild_catalogs(folder.parent for folder in done.folders)
    finally:
        ledger.close()
    assert [display(c) for c in rebuilt] == [f"{OUT}/catalog.duckdb"]
    assert not [name for name in _objects() if "course-a" in name or "aaaaaaaa" in name or "cccccccc" in name]
    assert "latest/report.html" not in _objects()  # the newest run writing latest/ was purged
    assert connect(OUT).execute("SELECT campaign, count(*) FROM documents GROUP BY ALL").fetchall() == [("course-b", 2)]
