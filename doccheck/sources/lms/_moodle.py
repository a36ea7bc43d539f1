"""Moodle "Download all submissions" (mod/assign), as Moodle writes the names.

From ``mod/assign/classes/downloader.php`` (moodle/moodle, Moodle 4.1+; ``locallib.php``'s
``download_submissions`` before it): the prefix is ``clean_filename(<full name with '_' made
' '> + '_' + <participant id>)``; under blind marking the full name is the string
``Participant``; with team submissions it is ``<group name>_<group id>`` (or ``Default group``
with no id). With "download as folders" (the default since 3.1) each plugin's files go under
``<prefix>_assignsubmission_<plugin>/<file path>`` (before 4.1: ``..._<plugin>_/``); without it,
flat: ``<prefix>_assignsubmission_<plugin>_<file name>``. The online-text plugin writes
``onlinetext.html``. The number is the assignment's participant id, not the user id.
"""

from __future__ import annotations

import re

from doccheck.sources.lms._model import Parsed

__all__ = ["LMS", "parse", "recognises"]

LMS = "moodle"
_FOLDER = re.compile(r"^(?P<prefix>[^/]+?)_assignsubmission_(?P<plugin>[a-z0-9]+)_?/(?P<path>.+)$")
_FLAT = re.compile(r"^(?P<prefix>[^/]+?)_assignsubmission_(?P<plugin>[a-z0-9]+)_(?P<path>[^/]+)$")
_PREFIX = re.compile(r"^(?P<name>.+)_(?P<id>\d+)$")
#: Moodle's string 'participant' (mod_assign) and 'defaultteam', in English.
_BLIND = "Participant"
_DEFAULT_GROUP = "Default group"


def recognises(name: str) -> bool:
    """True when ``name`` has the ``_assignsubmission_`` marker Moodle puts in every entry."""
    return "_assignsubmission_" in name


def parse(name: str, *, groups: bool = False) -> Parsed | None:
    """Read one entry name; ``groups`` says the assignment is a team submission."""
    m = _FOLDER.match(name) or _FLAT.match(name)
    if m is None:
        return None
    prefix, plugin, path = m["prefix"], m["plugin"], m["path"]
    p = _PREFIX.match(prefix)
    if p is not None:
        display, sid = p["name"], p["id"]
    elif prefix == _DEFAULT_GROUP:
        display, sid = prefix, "default-group"
    else:
        return None
    blind = display == _BLIND and not groups
    return Parsed(
        lms=LMS,
        student_id=sid,
        student=f"{_BLIND} {sid}" if blind else display,
        submitted_file=path,
        blind=blind,
        group=groups,
        online_text=plugin == "onlinetext",
    )
