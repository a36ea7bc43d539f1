"""The roster an LMS exports beside the zip: who should have submitted, with email and section.

Read in the LMS's own column names: Canvas's gradebook CSV ("Student", "ID", "SIS User ID",
"Section", and a "Points Possible" row under the header that is not a student), Moodle's
grading worksheet ("Identifier" = "Participant <participant id>", "Full name", "Email
address"), Blackboard's Grade Center ("Username", "First Name", "Last Name"). Joined by the id
the export's names carry, so roster students without work are listed as "no submission".
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from doccheck.errors import RosterError
from doccheck.sources.lms._model import EntryKind, ExportResult
from doccheck.storage import UserPath, open_input, resolve

__all__ = ["RosterEntry", "missing_from", "no_submission_lines", "read_roster"]

#: A roster is a class list: far below this; larger is refused before it is parsed.
MAX_ROSTER_BYTES = 20 * 1024 * 1024
_PARTICIPANT = re.compile(r"^\s*Participant\s+(\d+)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class RosterEntry:
    """One student of the roster, by the id the export's names carry."""

    student_id: str
    student: str
    email: str
    section: str


def read_roster(path: str | os.PathLike[str]) -> list[RosterEntry]:
    """Read a Canvas gradebook, Moodle grading worksheet or Blackboard Grade Center CSV (a local
    path or a URL: a store's file is read once, whole, capped at :data:`MAX_ROSTER_BYTES`)."""
    p = resolve(path)
    try:
        with _opened(p) as handle:
            rows = list(csv.DictReader(handle))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise RosterError(f"roster {p.name}: not a UTF-8 CSV ({exc})") from None
    columns = set(rows[0]) if rows else set()
    if {"Identifier", "Full name"} <= columns:
        return [_moodle(r) for r in rows if _PARTICIPANT.match(r.get("Identifier") or "")]
    if {"Student", "ID"} <= columns:
        return [_canvas(r) for r in rows if (r.get("ID") or "").strip().isdigit()]  # skips "Points Possible"
    if "Username" in columns:
        return [_blackboard(r) for r in rows if (r.get("Username") or "").strip()]
    raise RosterError(f"roster {p.name}: no Moodle 'Identifier', Canvas 'ID' or Blackboard 'Username' column")


@contextmanager
def _opened(p: UserPath) -> Iterator[TextIO]:
    """The roster as text: a local file checked by its size first, as ever; a remote one read
    whole up to one byte past the cap (one ranged read: no HEAD for its size)."""
    if isinstance(p, Path):
        if p.stat().st_size > MAX_ROSTER_BYTES:
            raise RosterError(f"roster {p.name}: over {MAX_ROSTER_BYTES} bytes")
        with p.open(newline="", encoding="utf-8-sig") as handle:
            yield handle
        return
    with open_input(p) as source:
        data = source.read(MAX_ROSTER_BYTES + 1)
    if len(data) > MAX_ROSTER_BYTES:
        raise RosterError(f"roster {p.name}: over {MAX_ROSTER_BYTES} bytes")
    yield io.StringIO(data.decode("utf-8-sig"), newline="")


def _moodle(r: dict[str, str]) -> RosterEntry:
    m = _PARTICIPANT.match(r["Identifier"])
    assert m is not None
    return RosterEntry(m[1], (r.get("Full name") or "").strip(), (r.get("Email address") or "").strip(), "")


def _canvas(r: dict[str, str]) -> RosterEntry:
    return RosterEntry(r["ID"].strip(), (r.get("Student") or "").strip(), "", (r.get("Section") or "").strip())


def _blackboard(r: dict[str, str]) -> RosterEntry:
    name = " ".join(x for x in ((r.get("First Name") or "").strip(), (r.get("Last Name") or "").strip()) if x)
    return RosterEntry(r["Username"].strip(), name, (r.get("Email") or "").strip(), "")


def missing_from(result: ExportResult, roster: list[RosterEntry]) -> list[RosterEntry]:
    """Roster students with no document in the export: listed as "no submission"."""
    present = {f.parsed.student_id for f in result.files if f.kind is EntryKind.DOCUMENT}
    return [r for r in roster if r.student_id not in present]


def no_submission_lines(result: ExportResult, roster_path: str | os.PathLike[str]) -> list[str]:
    """The lines printed under the export's summary: one per roster student without work."""
    blind = any(f.parsed.blind for f in result.files)  # the roster's real names are not shown then
    return [
        f"  no submission: {f'Participant {r.student_id}' if blind else r.student} ({r.student_id})"
        for r in missing_from(result, read_roster(roster_path))
    ]
