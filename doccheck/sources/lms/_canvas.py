"""Canvas "Download Submissions", as Canvas writes the names.

From ``lib/content_zipper.rb`` (instructure/canvas-lms, commit 05e9653c; docs/lms.md): each
submission is called ``[<user name>, "LATE" when late, <id>].compact.join("_")`` with every
character that is not a (Unicode) word character removed (``get_filename``,
``sanitize_file_name``). The user name is the sortable name ("Last, First") lower-cased, with
any ``_<digits>_`` in it collapsed (``sanitize_user_name``), so ``smith, bob`` becomes
``smithbob``; for an anonymous assignment there is no name and the id is
``anon_<anonymous id>`` (so a late one is ``LATE_anon_<id>``). Then:

- an upload: ``<called>_<attachment id>_<display name>``, with ``\\0/\\:*?"<>|`` runs in the
  display name made ``_`` (``add_upload_submission``, ``sanitize_attachment_filename``);
- a text entry: ``<called>_text.html``; a URL submission: ``<called>_link.html`` (not a
  document: listed, never checked) (``add_text_or_url``).

The names are read as Canvas reads them back when a teacher uploads marked files
(``Assignment#infer_comment_context_from_filename``): split on ``_``, the first all-digit part
is the user id and the next the attachment id. Identity leaves the attachment id out: a student
who replaces a file gets a new attachment id but keeps the document id.
"""

from __future__ import annotations

import re
import unicodedata

from doccheck.sources.lms._model import EntryKind, Parsed

__all__ = ["LMS", "parse", "recognises"]

LMS = "canvas"
_LATE = "LATE"  # Canvas writes it in capitals; the name beside it is lower-cased
_ANON = re.compile(r"^(?:(?P<late>LATE)_)?anon_(?P<anon>[A-Za-z0-9]+)_(?P<rest>.+)$")
_UPLOAD = re.compile(r"^(?P<aid>[0-9]+)_(?P<orig>.+)$")
_ENTRIES = {"text.html": EntryKind.DOCUMENT, "link.html": EntryKind.LINK}


def recognises(name: str) -> bool:
    """True when the top-level name has Canvas's shape (no folders; ids after the name)."""
    return parse(name) is not None


def _is_sanitised_name(name: str) -> bool:
    """What ``sanitize_file_name`` leaves of a lower-cased sortable name: word characters only."""
    return name == name.lower() and all(
        c == "_" or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc" for c in name
    )


def _who(name: str) -> tuple[str, str, bool, str, bool] | None:
    """``(student id, display, late, rest of the name, anonymous)`` of a Canvas entry name."""
    m = _ANON.match(name)
    if m is not None:
        sid = f"anon_{m['anon']}"
        return sid, sid, m["late"] is not None, m["rest"], True
    parts = name.split("_")
    first_id = next((i for i, part in enumerate(parts) if part.isascii() and part.isdigit()), None)
    if first_id is None or first_id == len(parts) - 1:
        return None
    who = parts[:first_id]
    late = bool(who) and who[-1] == _LATE
    display = "_".join(who[:-1] if late else who)
    if not _is_sanitised_name(display):
        return None
    return parts[first_id], display, late, "_".join(parts[first_id + 1 :]), False


def parse(name: str) -> Parsed | None:
    """Read one entry name (Canvas puts every file at the top of the zip)."""
    if "/" in name:
        return None
    who = _who(name)
    if who is None:
        return None
    sid, display, late, rest, anonymous = who
    kind = _ENTRIES.get(rest)
    if kind is not None:
        submitted = rest
    else:
        upload = _UPLOAD.match(rest)
        if upload is None:
            return None
        kind, submitted = EntryKind.DOCUMENT, upload["orig"]
    return Parsed(
        lms=LMS,
        student_id=sid,
        student=display,
        submitted_file=submitted,
        kind=kind,
        late=late,
        blind=anonymous,
        online_text=rest == "text.html",
    )
