"""Blackboard Learn "Download Assignment", as Blackboard writes the names.

``<Assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<original name>`` for each file and
``<Assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>.txt`` for the attempt's receipt (name,
date, comments: not a document, never sent). Blackboard's source is not public; the form is
Blackboard's help page "Download assignments" and public grading scripts (docs/lms.md).
Several attempts of one student: the latest is checked, the others are listed as superseded
unless ``--attempts all``.
"""

from __future__ import annotations

import re

from doccheck.sources.lms._model import EntryKind, Parsed

__all__ = ["LMS", "parse", "recognises"]

LMS = "blackboard"
_TS = r"\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}"
_FILE = re.compile(rf"^(?P<assignment>.+)_(?P<user>[^_/]+)_attempt_(?P<ts>{_TS})_(?P<orig>[^/]+)$")
_RECEIPT = re.compile(rf"^(?P<assignment>.+)_(?P<user>[^_/]+)_attempt_(?P<ts>{_TS})\.txt$")


def recognises(name: str) -> bool:
    """True when the name carries Blackboard's ``_attempt_<timestamp>`` marker."""
    return _RECEIPT.match(name) is not None or _FILE.match(name) is not None


def parse(name: str) -> Parsed | None:
    """Read one entry name."""
    m = _RECEIPT.match(name)
    if m is not None:
        return Parsed(LMS, m["user"], m["user"], "receipt.txt", EntryKind.RECEIPT, attempt=m["ts"])
    m = _FILE.match(name)
    if m is None:
        return None
    return Parsed(LMS, m["user"], m["user"], m["orig"], EntryKind.DOCUMENT, attempt=m["ts"])
