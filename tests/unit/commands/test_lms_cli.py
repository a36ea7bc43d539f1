"""``doccheck run EXPORT --dry-run`` and ``doccheck manifest EXPORT``: what was recognised is printed first."""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

from typer.testing import CliRunner

from doccheck.cli import app
from doccheck.sources.manifest import read_manifest

MEMBERS = {
    "Participant_4711_assignsubmission_file/essay.txt": b"An essay about rivers and floods in growing cities.",
    "Participant_4712_assignsubmission_file/essay.txt": b"A short answer on congestion pricing and its effects.",
    "Participant_4712_assignsubmission_file/inner.zip": b"PK",
}


def _export(tmp_path: Path) -> Path:
    path = tmp_path / "C101-Essay-7.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in MEMBERS.items():
            zf.writestr(name, data)
    return path


def _invoke(args: list[str], cwd: Path) -> tuple[int, str]:
    blank = {k: None for k in os.environ if k.startswith("DOCCHECK_")}
    result = CliRunner().invoke(
        app, args, env={**blank, "COLUMNS": "200", "DOCCHECK_DATABASE_URL": f"sqlite:///{cwd / 'l.db'}"}
    )
    return result.exit_code, result.stdout + result.stderr


def test_dry_run_prints_what_was_recognised_and_no_name(tmp_path: Path) -> None:
    code, out = _invoke(["run", str(_export(tmp_path)), "--dry-run", "--out", str(tmp_path / "out")], tmp_path)
    assert code == 0, out
    assert "Moodle export: 2 participants, 2 files, 1 rejected, blind marking" in out
    assert "Participant 4712 (4712): a zip inside the export is not opened" in out
    assert "C101-Essay-7" in out  # the campaign, from the export's name
    assert "dry run: nothing was sent." in out
    # The refused entry counts as rejected and is listed, as the reports list it.
    assert re.search(r"rows rejected\s*│?\s*1\b", out), out
    rejected_table = out.split("rejected rows (not sent, no charge)")[1]
    assert "inner.zip: Participant 4712 (4712): a zip inside the export is not opened" in rejected_table


def test_manifest_command_writes_a_runnable_manifest(tmp_path: Path) -> None:
    target = tmp_path / "review" / "manifest.csv"
    target.parent.mkdir()
    code, out = _invoke(["manifest", str(_export(tmp_path)), "-o", str(target)], tmp_path)
    assert code == 0, out
    assert "--campaign C101-Essay-7" in out
    result = read_manifest(target)
    assert not result.rejections and len(result.documents) == 2
    assert (
        target.read_text().splitlines()[0] == "document_id,path,name,lms,student_id,student,late,attempt,submitted_file"
    )


def test_an_unreadable_export_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.zip"
    bad.write_bytes(b"not a zip")
    code, out = _invoke(["run", str(bad), "--dry-run"], tmp_path)
    assert code == 1 and "cannot read export" in out and "Traceback" not in out


def test_roster_students_without_work_are_listed(tmp_path: Path) -> None:
    roster = tmp_path / "worksheet.csv"
    roster.write_text("Identifier,Full name,Email address\nParticipant 4711,A,a@x\nParticipant 4799,B,b@x\n")
    args = ["run", str(_export(tmp_path)), "--dry-run", "--out", str(tmp_path / "o"), "--roster", str(roster)]
    code, out = _invoke(args, tmp_path)
    assert code == 0, out
    # A blind-marked export: the roster's real name of a student without work is not shown either.
    assert "  no submission: Participant 4799 (4799)" in out and "(4711)" not in out.split("no submission")[1]
    assert ",B," not in out and " B " not in out
