"""Rosters in the LMSs' own column names, joined by the id the export's names carry."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from doccheck.errors import RosterError
from doccheck.sources.lms import read_export
from doccheck.sources.lms._roster import RosterEntry, missing_from, read_roster


def test_canvas_gradebook_skips_points_possible(tmp_path: Path) -> None:
    path = tmp_path / "grades.csv"
    path.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Essay (55)\n"
        "    Points Possible,,,,,10\n"
        '"Lovelace, Ada",1001,S1,ada,Section A,\n'
        '"Turing, Alan",1002,S2,alan,Section B,\n',
        encoding="utf-8",
    )
    assert read_roster(path) == [
        RosterEntry("1001", "Lovelace, Ada", "", "Section A"),
        RosterEntry("1002", "Turing, Alan", "", "Section B"),
    ]


def test_moodle_worksheet_and_no_submission(tmp_path: Path) -> None:
    path = tmp_path / "Grades-C101-Essay.csv"
    path.write_text(
        "\ufeffIdentifier,Full name,Email address,Status,Grade\n"
        "Participant 101,Ada Lovelace,ada@example.org,Submitted,\n"
        "Participant 105,Grace Hopper,grace@example.org,No submission,\n",
        encoding="utf-8",
    )
    roster = read_roster(path)
    assert roster[0] == RosterEntry("101", "Ada Lovelace", "ada@example.org", "")
    export = tmp_path / "e.zip"
    with zipfile.ZipFile(export, "w") as zf:
        zf.writestr("Ada Lovelace_101_assignsubmission_file/essay.txt", "x")
    assert [r.student for r in missing_from(read_export(export), roster)] == ["Grace Hopper"]


def test_an_unknown_roster_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("name,mark\nx,1\n", encoding="utf-8")
    with pytest.raises(RosterError, match="no Moodle 'Identifier'"):
        read_roster(path)
