"""The common model of one LMS export: what each entry of the download turned out to be.

Every reader (:mod:`.moodle`, :mod:`.canvas`, :mod:`.blackboard`, :mod:`.plain`) turns one
entry name into a :class:`Parsed` (or ``None`` when the name is not its LMS's); the walker in
:mod:`.walk` supplies the entries, and :func:`doccheck.sources.lms.read_export` joins the two.
Identity is derived here, once, so that every LMS follows the same rule.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["Entry", "EntryKind", "ExportResult", "Parsed", "SubmittedFile", "make_document_id"]


class EntryKind(StrEnum):
    """What an entry of the export is."""

    DOCUMENT = "document"  # a student's file (or online text) to check
    LINK = "link"  # a URL submission (Canvas ``_link.html``): listed, never checked
    RECEIPT = "receipt"  # a Blackboard attempt receipt (.txt): its comments are never sent
    REJECTED = "rejected"  # refused with a reason (unsafe entry, nested zip, unsupported type)
    SUPERSEDED = "superseded"  # an older Blackboard attempt, left out unless --attempts all


@dataclass(frozen=True)
class Parsed:
    """What one entry name says, in the LMS's own words.

    ``student_id`` is the id the LMS wrote in the name (Moodle: the assignment's participant id,
    not the user id; Canvas: the user id or the anonymous id; Blackboard: the username).
    ``student`` is the display name, or the pseudonym under blind marking, never the real name
    there. ``submitted_file`` is the name as the student submitted it.
    """

    lms: str
    student_id: str
    student: str
    submitted_file: str
    kind: EntryKind = EntryKind.DOCUMENT
    late: bool | None = None
    attempt: str | None = None
    blind: bool = False
    group: bool = False
    online_text: bool = False


@dataclass(frozen=True)
class Entry:
    """One member of the export (zip member or file under the folder), not yet read."""

    name: str  # the path inside the export, with forward slashes
    size: int  # bytes once inflated (declared by the zip; checked again while reading)


@dataclass(frozen=True)
class SubmittedFile:
    """One entry of the export, recognised: a document to plan, or a listed non-document."""

    entry: str
    parsed: Parsed
    document_id: str
    kind: EntryKind
    reason: str | None = None  # why it is rejected / not checked
    #: The machine code in the reports: a rejection's (nested_zip, unsupported_type, ...) or what
    #: a listed entry is (link, receipt, older_attempt).
    code: str | None = None


@dataclass
class ExportResult:
    """Everything recognised in one export, in entry order, and a one-line summary."""

    lms: str
    files: list[SubmittedFile] = field(default_factory=list)

    @property
    def documents(self) -> list[SubmittedFile]:
        """The entries that are to be checked."""
        return [f for f in self.files if f.kind is EntryKind.DOCUMENT]

    def not_checked(self) -> list[str]:
        """One line per entry that is listed but not checked, with its reason (printed under the summary)."""
        return [f"  {f.kind.value}: {f.entry}: {f.reason}" for f in self.files if f.kind is not EntryKind.DOCUMENT]

    def summary(self) -> str:
        """The line printed before anything is sent, e.g. ``Moodle export: 3 participants, ...``."""
        docs = self.documents
        people = {f.parsed.student_id for f in self.files if f.kind is not EntryKind.REJECTED or f.parsed.student_id}
        parts = [f"{len(people)} participants", f"{len(docs)} files"]
        online = sum(1 for f in docs if f.parsed.online_text)
        if online:
            parts.append(f"{online} online-text entries")
        for kind, word in (
            (EntryKind.LINK, "link entries (not checked)"),
            (EntryKind.RECEIPT, "receipts (not sent)"),
            (EntryKind.SUPERSEDED, "older attempts (not checked)"),
            (EntryKind.REJECTED, "rejected"),
        ):
            n = sum(1 for f in self.files if f.kind is kind)
            if n:
                parts.append(f"{n} {word}")
        late = sum(1 for f in docs if f.parsed.late)
        if late:
            parts.append(f"{late} late")
        if any(f.parsed.blind for f in self.files):
            parts.append("blind marking")
        if any(f.parsed.group for f in self.files):
            parts.append("group submissions")
        return f"{self.lms.capitalize() if self.lms != 'plain' else 'Plain'} export: " + ", ".join(parts)


def make_document_id(lms: str, student_id: str, submitted_file: str) -> str:
    """The deterministic id of one submitted file: ``<lms>-<owner hash>-<file hash>``.

    It depends on nothing else (not the zip's name, not whether it was unzipped, not the LMS's
    per-upload attachment id), so next week's download gives the same ids and, with unchanged
    content, the same Idempotency-Keys. It is a hash because ``document_id`` is always sent to
    the service as metadata, and the student's id and name must not be. The owner part (12
    hex of the LMS and student id) is shared by all of one student's files, so cohort matching
    never pairs them (:func:`doccheck.domain.document_owner`). Plain exports have no student,
    so every file is its own owner there.
    """
    owner = hashlib.sha256(f"{lms}\x1f{student_id}".encode()).hexdigest()[:12]
    whole = "\x1f".join((lms, student_id, submitted_file))
    return f"{lms}-{owner}-{hashlib.sha256(whole.encode('utf-8')).hexdigest()[:16]}"
