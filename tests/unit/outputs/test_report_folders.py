"""Report folders appear complete or not at all: a disk that fills mid-write (a real tiny
tmpfs when this process may mount one) leaves ``latest/`` on the previous complete run, and
the error names the folder in one line."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from doccheck.guards import describe_environment_error
from doccheck.outputs._parquet_reports import ReportTables, write_reports
from doccheck.outputs._report_folders import STALE_PARTIAL, leftover_partials, staging_dir, work_dir
from doccheck.outputs.instructor._instructor_files import write_instructor_files
from doccheck.outputs.instructor._run_outputs import write_run_outputs


def _tables(n: int, *, noise: int = 0) -> ReportTables:
    """``n`` rows, each with ``noise`` random bytes (hex: Parquet cannot compress them away)."""
    return ReportTables(
        submissions=[
            {
                "document_id": f"d{i}",
                "status": "completed",
                "check_id": f"c{i}",
                "error_message": os.urandom(noise).hex(),
            }
            for i in range(n)
        ]
    )


def _latest_ids(out: Path) -> list[str]:
    return [r["document_id"] for r in pq.read_table(out / "latest" / "submissions.parquet").to_pylist()]


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 700 KiB tmpfs (root only: skipped where this process may not mount); room for two runs of 400 rows."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=700k", "tmpfs", str(mount)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=False)  # lazy: a reader's handle may still be open


def test_staged_run_folder_is_hidden_until_the_page_is_written(tmp_path: Path) -> None:
    write_instructor_files(write_reports(tmp_path, "run-1", _tables(2)).run_dir, tmp_path / "latest", campaign="c")
    paths = write_reports(tmp_path, "run-2", _tables(3), staged=True)
    assert not paths.run_dir.exists() and work_dir(paths.run_dir) == staging_dir(paths.run_dir)
    assert _latest_ids(tmp_path) == ["d0", "d1"]  # latest/ still the previous complete run
    written = write_instructor_files(paths.run_dir, paths.latest_dir, campaign="c", run_id="r2")
    assert written.report_html == paths.run_dir / "report.html" and written.report_html.is_file()
    assert _latest_ids(tmp_path) == ["d0", "d1", "d2"]
    assert (tmp_path / "latest" / "report.html").is_file() and (tmp_path / "latest" / "documents.csv").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "run-1", "run-2"]  # no .partial, no staging


def test_disk_full_while_writing_reports_keeps_latest_and_names_the_folder(tiny_fs: Path) -> None:
    first = write_reports(tiny_fs, "run-1", _tables(3))
    write_instructor_files(first.run_dir, first.latest_dir, campaign="c", run_id="r1")
    before = {p.name: p.read_bytes() for p in (tiny_fs / "latest").iterdir()}
    with pytest.raises(OSError) as failure:  # ~2 MB of random text on 600 KiB
        write_reports(tiny_fs, "run-2", _tables(2000, noise=500))
    line = describe_environment_error(failure.value)
    assert line is not None and "\n" not in line
    assert "the disk is full" in line and str(tiny_fs / ".run-2.partial") in line and "rerun" in line
    assert {p.name: p.read_bytes() for p in (tiny_fs / "latest").iterdir()} == before
    assert sorted(p.name for p in tiny_fs.iterdir()) == ["latest", "run-1"]  # the failed folder freed its space


def test_disk_full_while_writing_the_page_keeps_latest_on_the_previous_run(tiny_fs: Path) -> None:
    first = write_reports(tiny_fs, "run-1", _tables(3))
    write_instructor_files(first.run_dir, first.latest_dir, campaign="c", run_id="r1")
    paths = write_reports(tiny_fs, "run-2", _tables(400), staged=True)
    ballast = tiny_fs / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT)  # fill what is left: the page cannot be written
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    with pytest.raises(OSError) as failure:  # as run and collect write it (the error names the folder)
        asyncio.run(write_run_outputs(paths.run_dir, paths.latest_dir, campaign="c", run_id="r2"))
    line = describe_environment_error(failure.value)
    assert line is not None and str(tiny_fs / ".run-2.partial") in line
    assert _latest_ids(tiny_fs) == ["d0", "d1", "d2"]
    assert (tiny_fs / "latest" / "report.html").is_file()
    assert not paths.run_dir.exists()  # never looks complete: only the hidden .partial folder
    assert leftover_partials(tiny_fs) == [staging_dir(paths.run_dir)]  # kept for the task's retry
    assert not [p for p in tiny_fs.iterdir() if p.name.startswith(".latest")]
    ballast.unlink()  # space freed: the retry completes the same folder
    write_instructor_files(paths.run_dir, paths.latest_dir, campaign="c", run_id="r2")
    assert len(_latest_ids(tiny_fs)) == 400 and paths.run_dir.is_dir() and not leftover_partials(tiny_fs)


def test_leftover_partial_folders_are_named_then_removed_when_stale(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mine = staging_dir(tmp_path / "run-2")
    other, stale = staging_dir(tmp_path / "run-0"), staging_dir(tmp_path / "run-old")
    for folder in (mine, other, stale):
        (folder / "files").mkdir(parents=True)
        (folder / "submissions.parquet").write_bytes(b"half")
    for folder, age in ((other, 3600), (stale, STALE_PARTIAL + 60)):
        for path in (folder, folder / "files"):
            os.utime(path, (path.stat().st_atime, path.stat().st_mtime - age))
    with caplog.at_level("WARNING", logger="doccheck.outputs"):
        write_reports(tmp_path, "run-2", _tables(1))
    assert leftover_partials(tmp_path) == [other]  # this run's own leftover reused, the stale one removed
    assert str(other) in caplog.text and str(stale) in caplog.text


def test_an_earlier_runs_rewrite_leaves_latest_alone(tmp_path: Path) -> None:
    write_reports(tmp_path, "run-2", _tables(2))
    write_reports(tmp_path, "run-1", _tables(5), latest=False)  # collect rewriting an earlier run
    assert _latest_ids(tmp_path) == ["d0", "d1"] and (tmp_path / "run-1" / "submissions.parquet").is_file()


def test_purge_finds_an_interrupted_runs_partial_folder(tmp_path: Path) -> None:
    from doccheck.ledger import scan_run_folders

    run_id = "abcd1234-0000-0000-0000-000000000000"
    complete, partial = (
        tmp_path / "c-20261125T101010123Z-abcd1234",
        staging_dir(tmp_path / "c-20261125T111111456Z-abcd1234"),
    )
    for folder in (complete, partial, tmp_path / "c-20261125T101010123Z-ffff0000"):
        folder.mkdir()
    assert scan_run_folders([tmp_path], [run_id]) == [partial, complete]
