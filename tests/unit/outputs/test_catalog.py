"""The term's catalog (doccheck.outputs._term_catalog) over run folders written as a run writes them:
the current-state ``documents`` view counts each document once, a reader holding the catalog
open is never blocked and keeps a whole catalog, a copied folder opens from anywhere, a column
added by a later run is read, and no student data is copied into the catalog."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from doccheck.errors import CatalogError
from doccheck.outputs._parquet_reports import SUBMISSIONS_SCHEMA
from doccheck.outputs._term_catalog import CATALOG_FILE, connect, rebuild_catalog, rebuild_catalogs, write_run_file
from doccheck.outputs.instructor._documents_table import documents_schema

T0 = datetime(2026, 9, 1, tzinfo=UTC)


def _run(out: Path, campaign: str, run_id: str, day: int, docs: dict[str, int], *, new: bool = True,
         extra: dict[str, Any] | None = None) -> Path:  # fmt: skip
    """A run folder as a run leaves it: documents.parquet, submissions.parquet, run.json."""
    started = T0 + timedelta(days=day)
    folder = out / f"{campaign}-{started:%Y%m%dT%H%M%S}000Z-{run_id[:8]}"
    folder.mkdir(parents=True)
    rows = [{"document_id": d, "name": f"Student {d}", "status": "submitted", "check_id": f"chk-{campaign}-{d}",
             "charged_cents": cents, "refunded_cents": 0, "net_cents": cents, "cost_cents": cents,
             "new_this_run": new, "campaign": campaign, "run_id": run_id} for d, cents in docs.items()]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows, schema=documents_schema([])), folder / "documents.parquet")
    subs = pa.Table.from_pylist([{k: r[k] for k in ("document_id", "status", "check_id", "net_cents")} for r in rows],
                                schema=SUBMISSIONS_SCHEMA)  # fmt: skip
    for name, values in (extra or {}).items():
        subs = subs.append_column(name, pa.array([values] * len(rows)))
    pq.write_table(subs, folder / "submissions.parquet")
    write_run_file(folder, run_id=run_id, campaign=campaign, status="finished", started_at=started,
                   finished_at=started + timedelta(minutes=5))  # fmt: skip
    return folder


def _term(out: Path) -> None:
    """Three campaigns and a rerun of the first (which repeats its documents, checks reused)."""
    _run(out, "course-a", "aaaaaaaa-1", 0, {"a1": 10, "a2": 12})
    _run(out, "course-b", "bbbbbbbb-1", 1, {"b1": 7})
    _run(out, "course-c", "cccccccc-1", 2, {"c1": 5, "c2": 5, "c3": 6})
    _run(out, "course-a", "aaaaaaaa-2", 7, {"a1": 10, "a2": 12, "a3": 9}, new=False)
    (out / "latest").mkdir()  # the newest run's copy: never read by the catalog
    shutil.copy2(out / sorted(p.name for p in out.iterdir() if p.name.startswith("course-a"))[-1] / "documents.parquet",
                 out / "latest" / "documents.parquet")  # fmt: skip


def test_documents_count_each_document_once_and_sum_to_the_charge(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    _term(out)
    rebuild_catalog(out)
    con = connect(out)
    per_course = dict(con.execute("SELECT campaign, count(*) FROM documents GROUP BY ALL").fetchall())
    assert per_course == {"course-a": 3, "course-b": 1, "course-c": 3}
    assert con.execute("SELECT sum(net_cents) FROM documents").fetchall() == [(10 + 12 + 9 + 7 + 16,)]
    assert con.execute("SELECT count(*) FROM documents_history").fetchall() == [(9,)]
    runs = con.execute("SELECT run_id, campaign, documents, report_folder FROM runs ORDER BY started_at").fetchall()
    assert [r[:3] for r in runs] == [("aaaaaaaa-1", "course-a", 2), ("bbbbbbbb-1", "course-b", 1),
                                     ("cccccccc-1", "course-c", 3), ("aaaaaaaa-2", "course-a", 3)]  # fmt: skip
    assert con.execute("SELECT DISTINCT run_id FROM documents WHERE campaign = 'course-a'").fetchall() == [
        ("aaaaaaaa-2",)
    ]
    assert con.execute("SELECT count(*), count(run_id) FROM submissions").fetchall() == [(9, 9)]
    assert con.execute("SELECT count(*) FROM ai_results").fetchall() == [(0,)]  # no run wrote one: empty, still there


def test_a_reader_holding_the_catalog_keeps_a_whole_one_and_blocks_no_rebuild(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    _term(out)
    rebuild_catalog(out)
    reader = connect(out)
    assert reader.execute("SELECT count(*) FROM runs").fetchall() == [(4,)]
    _run(out, "course-d", "dddddddd-1", 9, {"d1": 3})
    rebuild_catalog(out)  # while the reader holds the old file open
    assert reader.execute("SELECT count(*) FROM runs").fetchall() == [(4,)]  # the whole old catalog
    assert connect(out).execute("SELECT count(*) FROM runs").fetchall() == [(5,)]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left behind


def test_a_reader_in_another_process_never_blocks_a_rebuild(tmp_path: Path) -> None:
    """A notebook's kernel holds the catalog open (DuckDB locks the file it opened); a run's
    rebuild in another process writes a new file and renames it over: neither waits."""
    import subprocess
    import sys

    out = tmp_path / "reports"
    _term(out)
    rebuild_catalog(out)
    reader = subprocess.Popen(
        [sys.executable, "-c", "import sys, duckdb; c = duckdb.connect(sys.argv[1] + '/catalog.duckdb', read_only=True)"
         "; q = 'SELECT count(*) FROM runs'; "
         "print(c.execute(q).fetchall()[0][0], flush=True); sys.stdin.readline(); "
         "print(c.execute(q).fetchall()[0][0], flush=True)", str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdin is not None
        assert reader.stdout.readline().strip() == "4"  # open now
        _run(out, "course-d", "dddddddd-1", 9, {"d1": 3})
        rebuild_catalog(out)
        assert connect(out).execute("SELECT count(*) FROM runs").fetchall() == [(5,)]
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == "4"  # its own, whole, older catalog
    finally:
        reader.kill()
        reader.wait(timeout=10)


def test_the_catalog_opens_with_a_plain_connect_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``duckdb.connect(path, read_only=True)`` as any tool opens it, from the folder above, from
    inside and from elsewhere (DuckDB binds a relative path against the reader's working directory:
    the views find their files beside the catalog instead, duckdb/duckdb#2342)."""
    import duckdb

    out = tmp_path / "reports"
    _term(out)
    rebuild_catalog(out)
    (tmp_path / "elsewhere").mkdir()
    for cwd, path in ((tmp_path, "reports/catalog.duckdb"), (out, CATALOG_FILE),
                      (tmp_path / "elsewhere", str(out / CATALOG_FILE))):  # fmt: skip
        monkeypatch.chdir(cwd)
        with duckdb.connect(path, read_only=True) as con:
            assert con.execute("SELECT count(*), sum(net_cents) FROM documents").fetchall() == [(7, 54)]
    assert not (out / f"{CATALOG_FILE}.tmp").exists()  # DuckDB's temporary folder: named, not made


@pytest.mark.parametrize("how", ["copied", "moved"])
def test_a_copied_or_moved_folder_reads_its_own_files(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    out = tmp_path / "reports"
    _term(out)
    rebuild_catalog(out)
    moved = tmp_path / "archive" / "term-2026"
    shutil.copytree(out, moved, symlinks=True)
    if how == "moved":
        shutil.rmtree(out)
    else:  # the original loses a folder after the copy: the copy must not be reading it
        for folder in [p for p in out.iterdir() if p.name.startswith("course-b")]:
            shutil.rmtree(folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert connect(moved / CATALOG_FILE).execute("SELECT count(*) FROM documents").fetchall() == [(7,)]
    assert connect(moved).execute("SELECT count(*) FROM runs").fetchall() == [(4,)]
    with duckdb.connect(str(moved / CATALOG_FILE), read_only=True) as con:
        assert con.execute("SELECT count(*), sum(net_cents) FROM documents").fetchall() == [(7, 54)]
    import pyarrow.dataset as ds  # tables/ holds relative links: they moved with the folder

    table = ds.dataset(moved / "tables" / "documents", partitioning="hive").to_table()
    assert table.num_rows == 9


def test_a_catalog_attached_to_another_database_reads_the_folder_it_was_built_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB opened on another database first (``ATTACH``): its temporary folder is that database's,
    so the views read the folder where the catalog was built."""
    import duckdb

    out = tmp_path / "reports"
    _term(out)
    rebuild_catalog(out)
    monkeypatch.chdir(tmp_path)
    with duckdb.connect(str(tmp_path / "mine.duckdb")) as con:
        con.execute("ATTACH 'reports/catalog.duckdb' AS term (READ_ONLY)").fetchall()
        assert con.execute("SELECT count(*) FROM term.documents").fetchall() == [(7,)]


def test_a_column_added_by_a_later_run_is_read(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    _run(out, "course-a", "aaaaaaaa-1", 0, {"a1": 10})
    # (a column no schema has: sent_as, the example this test first used, is in the schema since issue 41)
    _run(out, "course-a", "aaaaaaaa-2", 1, {"a2": 10}, extra={"added_later": "text"})
    rebuild_catalog(out)
    rows = connect(out).execute("SELECT document_id, added_later FROM submissions ORDER BY document_id").fetchall()
    assert rows == [("a1", None), ("a2", "text")]


def test_the_catalog_copies_no_student_data_and_forgets_a_purged_run(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    _term(out)
    rebuild_catalog(out)
    assert b"Student a1" not in (out / CATALOG_FILE).read_bytes()
    assert b"Student a1" in (out / "latest" / "documents.parquet").read_bytes()  # the probe works on plain files
    for folder in [p for p in out.iterdir() if p.name.startswith("course-a")]:
        shutil.rmtree(folder)
    assert rebuild_catalogs([out, tmp_path / "nothing-here"]) == [out / CATALOG_FILE]
    con = connect(out)
    assert con.execute("SELECT DISTINCT campaign FROM documents ORDER BY 1").fetchall() == [
        ("course-b",),
        ("course-c",),
    ]


def test_no_catalog_is_an_error_that_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="collect"):
        connect(tmp_path)


def test_an_empty_out_folder_gives_a_catalog_of_empty_views(tmp_path: Path) -> None:
    rebuild_catalog(tmp_path)
    con = connect(tmp_path)
    assert con.execute("SELECT count(*) FROM documents").fetchall() == [(0,)]
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(0,)]
    assert sorted(os.listdir(tmp_path)) == [CATALOG_FILE, "tables"]


def test_the_catalog_setting_turns_the_rebuild_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from doccheck.outputs._term_catalog import refresh_catalog

    _run(tmp_path, "course-a", "aaaaaaaa-1", 0, {"a1": 10})
    monkeypatch.setenv("DOCCHECK_CATALOG", "false")
    assert refresh_catalog(tmp_path) is None and not (tmp_path / CATALOG_FILE).exists()
    monkeypatch.setenv("DOCCHECK_CATALOG", "true")
    assert refresh_catalog(tmp_path) == tmp_path / CATALOG_FILE


def test_a_run_returns_its_freed_memory_before_the_rebuild_loads_duckdb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rebuild is a run's last step and its peak RSS (issue 49): the heap's free pages go
    back to the system first, and only when the catalog is built."""
    from doccheck.outputs import _term_catalog as catalog

    calls: list[bool] = []
    monkeypatch.setattr(catalog, "return_freed_memory", lambda: calls.append(True) or True)
    _run(tmp_path, "course-a", "aaaaaaaa-1", 0, {"a1": 10})
    monkeypatch.setenv("DOCCHECK_CATALOG", "false")
    catalog.refresh_catalog(tmp_path)
    assert calls == []
    monkeypatch.setenv("DOCCHECK_CATALOG", "true")
    assert catalog.refresh_catalog(tmp_path) == tmp_path / CATALOG_FILE and calls == [True]
    monkeypatch.undo()
    assert catalog.return_freed_memory() in (True, False)  # glibc's malloc_trim here, a no-op elsewhere


def test_a_collect_folder_of_the_same_run_replaces_the_first(tmp_path: Path) -> None:
    first = _run(tmp_path, "course-a", "aaaaaaaa-1", 0, {"a1": 10})
    later = first.with_name(first.name.replace("000Z", "999Z"))  # collect: the same run, a later stamp
    shutil.copytree(first, later)
    rows = [{"document_id": "a1", "net_cents": 7, "campaign": "course-a", "run_id": "aaaaaaaa-1"}]
    pq.write_table(pa.Table.from_pylist(rows, schema=documents_schema([])), later / "documents.parquet")
    rebuild_catalog(tmp_path)
    con = connect(tmp_path)
    assert con.execute("SELECT report_folder FROM runs").fetchall() == [(later.name,)]
    assert con.execute("SELECT net_cents FROM documents").fetchall() == [(7,)]


def test_the_runs_read_across_in_one_call_without_the_catalog(tmp_path: Path) -> None:
    """<out>/tables/: hive-style partitions of links, one run each (never latest/), read by
    DuckDB, pyarrow and pandas in one call; a campaign with a space survives the round trip."""
    import duckdb
    import pyarrow.dataset as ds

    out = tmp_path / "reports"
    _term(out)
    _run(out, "Hist 101", "hhhhhhhh-1", 3, {"h1": 4})
    rebuild_catalog(out)
    tables = out / "tables"
    read = duckdb.sql(f"SELECT campaign, run, count(*) FROM read_parquet('{tables}/submissions/*/*/*.parquet', "
                      "hive_partitioning = true) GROUP BY ALL ORDER BY ALL").fetchall()  # fmt: skip
    assert read == [("Hist 101", "hhhhhhhh-1", 1), ("course-a", "aaaaaaaa-1", 2), ("course-a", "aaaaaaaa-2", 3),
                    ("course-b", "bbbbbbbb-1", 1), ("course-c", "cccccccc-1", 3)]  # fmt: skip
    frame = ds.dataset(tables / "documents", partitioning="hive").to_table().to_pandas()
    assert len(frame) == 10 and set(frame["campaign"]) == {"course-a", "course-b", "course-c", "Hist 101"}
    assert frame.groupby("campaign")["document_id"].nunique().to_dict()["course-a"] == 3  # a rerun repeats rows
    assert all(p.is_symlink() for p in tables.rglob("*.parquet"))  # links, no copy of any row
    for folder in [p for p in out.iterdir() if p.name.startswith("course-a")]:
        shutil.rmtree(folder)
    rebuild_catalogs([out])  # as purge does: no link to a removed folder is left
    assert sorted(p.name for p in (tables / "documents").iterdir()) == ["campaign=Hist%20101", "campaign=course-b",
                                                                       "campaign=course-c"]  # fmt: skip


def test_duckdb_is_loaded_only_when_a_catalog_is_built_or_read() -> None:
    """Loading DuckDB costs a process ~40 MB of RSS (34 MB of them its library's pages): a run
    pays it at its last step, the rebuild (the 20,000-document term's first run peaks 20-24 MB
    higher with the catalog than without it, docs/benchmarks.md), and importing the commands,
    the pipeline, the outputs, the receiver or the notebook API must not pay it up front."""
    import subprocess
    import sys

    code = (
        "import sys, doccheck.cli, doccheck.commands, doccheck.pipeline, doccheck.outputs, "
        "doccheck.outputs.instructor, doccheck.receiver, doccheck.notebook; print('duckdb' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr
