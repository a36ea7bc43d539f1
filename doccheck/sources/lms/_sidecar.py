"""What the reports need of an export and are never sent: its students, refusals and roster.

The derived manifest (``<campaign>.csv``) carries the document ids and paths the run reads;
beside it, ``<campaign>.lms.json`` keeps, per document id, the LMS columns (``lms,
student_id, student, late, attempt, submitted_file`` and the roster's ``email, section``),
the entries refused with their reason and student, the entries listed but not checked
(links, receipts, older attempts), the roster's students without work, and the export's
``lms`` and ``export_name``. The run never reads it to send anything (metadata stays the ``--metadata-columns``
allowlist); the reports join it back by document id (``doccheck.outputs.lms_rows``).

Under blind marking the roster's names and emails are never joined: the pseudonym the export
wrote (``Participant <id>``) is the only name the file, and thus the reports, hold.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

from doccheck.sources.lms._model import EntryKind, ExportResult, SubmittedFile
from doccheck.sources.lms._roster import RosterEntry, missing_from
from doccheck.storage import is_url

__all__ = ["MAX_SIDECAR_BYTES", "ROSTER_COLUMNS", "read_sidecar", "sidecar_path", "write_sidecar"]

#: The roster's columns added to the reports (null without ``--roster``).
ROSTER_COLUMNS = ("email", "section")
#: Far above a 20,000-file course's (~4 MB); a larger file is not read.
MAX_SIDECAR_BYTES = 64 * 1024 * 1024
_SUFFIX = ".lms.json"


def sidecar_path(manifest: str | os.PathLike[str]) -> Path:
    """``<stem>.lms.json`` beside the derived manifest ``<stem>.csv``."""
    p = Path(manifest)
    return p.with_name(p.stem + _SUFFIX)


def _columns(f: SubmittedFile) -> dict[str, Any]:
    p = f.parsed
    return {
        "lms": p.lms,
        "student_id": p.student_id or None,
        "student": p.student or None,
        "late": p.late,
        "attempt": p.attempt,
        "submitted_file": p.submitted_file or PurePosixPath(f.entry).name,
    }


def _rejected(f: SubmittedFile) -> dict[str, Any]:
    return {
        **_columns(f),
        "document_id": f.document_id or None,
        "code": f.code or "export_entry_refused",
        "reason": f"{f.entry}: {f.reason}",
    }


def _listed(f: SubmittedFile) -> dict[str, Any]:
    """A link, receipt or older attempt: listed in the reports, never sent. No document id: an
    older attempt's file may share its name, and so its id, with the file checked in the latest."""
    return {**_columns(f), "kind": f.kind.value, "code": f.code, "reason": f"{f.entry}: {f.reason}"}


def write_sidecar(
    manifest: Path, result: ExportResult, roster: list[RosterEntry] | None = None, export_name: str | None = None
) -> Path:
    """Write the sidecar of ``manifest`` (atomically) from ``result`` and the roster, when given.

    ``export_name``: the file or folder name of the export (``C101-Essay 1-42.zip``), so the
    report can say which download its rows came from.
    """
    blind = any(f.parsed.blind for f in result.files)
    extra = {r.student_id: _roster_columns(r, blind) for r in roster or []}
    documents = {f.document_id: {**_columns(f), **extra.get(f.parsed.student_id, {})} for f in result.documents}
    rejected = [
        {**_rejected(f), **extra.get(f.parsed.student_id, {})} for f in result.files if f.kind is EntryKind.REJECTED
    ]
    absent = [
        {
            "lms": result.lms,
            "student_id": r.student_id,
            "student": f"Participant {r.student_id}" if blind else (r.student or None),
            **_roster_columns(r, blind),
        }
        for r in (missing_from(result, roster) if roster else [])
    ]
    listed = [
        {**_listed(f), **extra.get(f.parsed.student_id, {})}
        for f in result.files
        if f.kind in (EntryKind.LINK, EntryKind.RECEIPT, EntryKind.SUPERSEDED)
    ]
    body = {
        "lms": result.lms,
        "export_name": export_name,
        "blind": blind,
        "documents": documents,
        "rejected": rejected,
        "not_checked": listed,
        "no_submission": absent,
    }
    target = sidecar_path(manifest)
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _roster_columns(r: RosterEntry, blind: bool) -> dict[str, Any]:
    """The roster's columns joined into the reports: no email under blind marking (it names the student)."""
    return {"email": None if blind else (r.email or None), "section": r.section or None}


def read_sidecar(manifest: str | os.PathLike[str] | None) -> dict[str, Any] | None:
    """The sidecar of ``manifest`` (None for a manifest that is not derived from an export).

    A manifest at a URL has none: an export's manifest is derived on the local disk (the run's
    work folder, even for an export read from a store), so nothing is asked of the store."""
    if not manifest or not isinstance(manifest, str | os.PathLike) or is_url(os.fspath(manifest)):
        return None
    path = sidecar_path(manifest)
    try:
        if not path.is_file() or path.stat().st_size > MAX_SIDECAR_BYTES:
            return None
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) else None
