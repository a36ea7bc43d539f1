"""Canvas "Download Submissions", as Canvas writes the names.

``<sortable name>[_LATE]_<user id>_<attachment id>_<original name>`` for uploads, where the
sortable name is "Last, First" lower-cased with everything but letters and digits removed;
``<sortable name>[_LATE]_<user id>_text.html`` for a text entry and ``..._link.html`` for a
URL submission (not a document: listed, never checked). Anonymous assignments write
``anon_<anonymous id>`` for the name and id. Identity leaves the attachment id out: a student
who replaces a file gets a new attachment id but keeps the document id.
"""

from __future__ import annotations

import re

from doccheck.sources.lms.model import EntryKind, Parsed

__all__ = ["LMS", "parse", "recognises"]

LMS = "canvas"
_WHO = r"(?:anon_(?P<anon>[A-Za-z0-9]+)|(?P<name>[a-z0-9]*)(?P<late1>_late)?_(?P<uid>\d+))"
_ANON_LATE = r"(?P<late2>_late)?"
_UPLOAD = re.compile(rf"^{_WHO}{_ANON_LATE}_(?P<aid>\d+)_(?P<orig>.+)$", re.IGNORECASE)
_ENTRY = re.compile(rf"^{_WHO}{_ANON_LATE}_(?P<what>text|link)\.html$", re.IGNORECASE)


def recognises(name: str) -> bool:
    """True when the top-level name has Canvas's shape (no folders; ids after the name)."""
    return "/" not in name and (_ENTRY.match(name) is not None or _UPLOAD.match(name) is not None)


def parse(name: str) -> Parsed | None:
    """Read one entry name (Canvas puts every file at the top of the zip)."""
    if "/" in name:
        return None
    m = _ENTRY.match(name)
    kind, online = EntryKind.DOCUMENT, False
    if m is not None:
        what = m["what"].lower()
        kind = EntryKind.LINK if what == "link" else EntryKind.DOCUMENT
        online = what == "text"
        submitted = f"{what}.html"
    else:
        m = _UPLOAD.match(name)
        if m is None:
            return None
        submitted = m["orig"]
    anon = m["anon"]
    late = bool(m["late1"] or m["late2"])
    if anon:
        sid, student = f"anon_{anon}", f"anon_{anon}"
    else:
        sid, student = m["uid"], m["name"]
    return Parsed(
        lms=LMS,
        student_id=sid,
        student=student,
        submitted_file=submitted,
        kind=kind,
        late=late,
        blind=bool(anon),
        online_text=online,
    )
