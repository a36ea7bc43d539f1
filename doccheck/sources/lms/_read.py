"""Reading an LMS export: recognise the LMS, name each entry, keep the latest attempt (:func:`read_export`)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import PurePosixPath

from doccheck.extract import IMAGE, IMAGE_TYPES, extension_of, is_supported
from doccheck.sources.lms import _blackboard, _canvas, _moodle
from doccheck.sources.lms._model import (
    Entry,
    EntryKind,
    ExportResult,
    Parsed,
    SubmittedFile,
    make_document_id,
)
from doccheck.sources.lms._walk import DEFAULT_LIMITS, ExportLimits, Refused, open_export, walk_export
from doccheck.storage import resolve

LMS_NAMES = ("moodle", "canvas", "blackboard", "plain")
_RECOGNISERS = {"moodle": _moodle.recognises, "canvas": _canvas.recognises, "blackboard": _blackboard.recognises}


def detect_lms(names: list[str]) -> str:
    """The LMS whose naming most entries follow; ``plain`` when none does."""
    votes = Counter(lms for name in names for lms, test in _RECOGNISERS.items() if test(name))
    return votes.most_common(1)[0][0] if votes else "plain"


def _parse(lms: str, name: str, groups: bool) -> Parsed | None:
    if lms == "moodle":
        return _moodle.parse(name, groups=groups)
    if lms == "canvas":
        return _canvas.parse(name)
    if lms == "blackboard":
        return _blackboard.parse(name)
    return Parsed("plain", name, PurePosixPath(name).name, PurePosixPath(name).name)


def read_export(
    path: str | os.PathLike[str],
    *,
    lms: str | None = None,
    attempts: str = "latest",
    groups: bool = False,
    limits: ExportLimits = DEFAULT_LIMITS,
) -> ExportResult:
    """Read ``path`` (a .zip or folder, a local path or a URL) into one :class:`ExportResult`,
    every entry accounted for.

    ``lms`` forces the format; ``attempts`` is ``latest`` or ``all`` (Blackboard); ``groups``
    says a Moodle assignment is a team submission (its names cannot tell). Raises
    :class:`UnsafeExport` only when the export as a whole is past its bounds.
    """
    source = resolve(path)
    with open_export(source) as opened:
        items = list(walk_export(source, limits, opened))
    return recognise(items, lms=lms, attempts=attempts, groups=groups)


def recognise(items: list[Entry | Refused], *, lms: str | None, attempts: str, groups: bool) -> ExportResult:
    """The walked entries of an export named, classified and their latest attempts kept."""
    names = [i.name for i in items if isinstance(i, Entry) and not _ignored(i.name)]
    chosen = lms or detect_lms(names)
    if chosen not in LMS_NAMES:
        raise ValueError(f"unknown LMS {chosen!r}; choose one of {', '.join(LMS_NAMES)}")
    result = ExportResult(lms=chosen)
    for item in items:
        if _ignored(item.name):
            continue
        parsed = _parse(chosen, item.name, groups)
        if parsed is None:
            unknown = Parsed(chosen, "", "", PurePosixPath(item.name).name)  # nobody to name
            reason = item.reason if isinstance(item, Refused) else f"not named as a {chosen} export names files"
            code = "unsafe_entry" if isinstance(item, Refused) else "unrecognised_entry"
            result.files.append(SubmittedFile(item.name, unknown, "", EntryKind.REJECTED, reason, code))
            continue
        result.files.append(_classify(item, parsed, attempts))
    if chosen == "blackboard" and attempts != "all":
        _supersede_older_attempts(result)
    return result


def _ignored(name: str) -> bool:
    """Files the operating system leaves beside an unzipped export (never a student's work)."""
    base = PurePosixPath(name).name
    return name.startswith("__MACOSX/") or base in {".DS_Store", "Thumbs.db", "desktop.ini"}


def _classify(item: Entry | Refused, parsed: Parsed, attempts: str) -> SubmittedFile:
    """Kind and id of one parsed entry; a refusal keeps the student it belongs to."""
    file_key = "" if parsed.lms == "plain" else parsed.submitted_file  # plain: the path is the id
    if parsed.lms == "blackboard" and attempts == "all" and parsed.attempt:
        file_key = f"{parsed.attempt}/{file_key}"
    doc_id = make_document_id(parsed.lms, parsed.student_id, file_key)
    who = f"{parsed.student} ({parsed.student_id})"
    if isinstance(item, Refused):
        return SubmittedFile(item.name, parsed, doc_id, EntryKind.REJECTED, f"{who}: {item.reason}", "unsafe_entry")
    if parsed.kind is not EntryKind.DOCUMENT:
        what = "a URL submission, not a document" if parsed.kind is EntryKind.LINK else "an attempt receipt, not sent"
        return SubmittedFile(item.name, parsed, doc_id, parsed.kind, f"{who}: {what}", parsed.kind.value)
    if parsed.submitted_file.lower().endswith(".zip"):
        return SubmittedFile(
            item.name, parsed, doc_id, EntryKind.REJECTED, f"{who}: a zip inside the export is not opened", "nested_zip"
        )
    if extension_of(parsed.submitted_file) in IMAGE_TYPES:  # a photo of handwriting: said, never a silent 0
        reason = f"{who}: {parsed.submitted_file!r} is an {IMAGE}"
        return SubmittedFile(item.name, parsed, doc_id, EntryKind.REJECTED, reason, "image_without_text")
    if not is_supported(parsed.submitted_file):
        reason = f"{who}: file type of {parsed.submitted_file!r} is not supported"
        return SubmittedFile(item.name, parsed, doc_id, EntryKind.REJECTED, reason, "unsupported_type")
    return SubmittedFile(item.name, parsed, doc_id, EntryKind.DOCUMENT)


def _supersede_older_attempts(result: ExportResult) -> None:
    """Blackboard: keep each student's latest attempt; older ones are listed as superseded."""
    latest: dict[str, str] = {}
    for f in result.files:
        if f.parsed.attempt and f.parsed.student_id:
            latest[f.parsed.student_id] = max(latest.get(f.parsed.student_id, ""), f.parsed.attempt)
    for i, f in enumerate(result.files):
        if f.kind in (EntryKind.DOCUMENT, EntryKind.RECEIPT) and f.parsed.attempt != latest.get(f.parsed.student_id):
            who = f"{f.parsed.student} ({f.parsed.student_id})"
            result.files[i] = SubmittedFile(
                f.entry, f.parsed, f.document_id, EntryKind.SUPERSEDED, f"{who}: an older attempt", "older_attempt"
            )
