"""Turn an LMS export into the manifest doccheck runs: one CSV row per document, files copied once.

The run reads its manifest more than once (planning, then batch by batch), so an export is
materialised once per run into a work folder: each document streamed (capped) out of the zip,
or copied from the unzipped folder, to ``files/<hash of its id>/<file name>``, and
``<campaign>.csv`` written beside them with ``document_id``, ``path``, ``name`` (the id: never
the student's name) and the LMS columns ``lms, student_id, student, late, attempt,
submitted_file`` (not sent unless named in ``--metadata-columns``). The CSV's stem is the
default campaign, derived from the export's name so that it stays the same across downloads.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from doccheck.sources.lms._model import ExportResult, SubmittedFile
from doccheck.sources.lms._read import recognise
from doccheck.sources.lms._roster import read_roster
from doccheck.sources.lms._sidecar import write_sidecar
from doccheck.sources.lms._walk import (
    DEFAULT_LIMITS,
    ExportLimits,
    copy_member,
    is_zip,
    member_order,
    open_export,
    walk_export,
)
from doccheck.storage import UserPath, resolve

__all__ = [
    "LMS_COLUMNS",
    "Derived",
    "as_manifest",
    "derive_manifest",
    "review_manifest",
    "export_campaign",
    "is_export",
    "write_manifest",
]

#: The columns an export adds to every document (null for manifest rows in the reports).
LMS_COLUMNS = ("lms", "student_id", "student", "late", "attempt", "submitted_file")
_COPY_SUFFIX = re.compile(r" \(\d+\)$")  # what browsers add to a second download: "x (1).zip"
_DOWNLOAD_TIME = re.compile(r"_\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}$")  # Blackboard's zip name
_SAFE = re.compile(r"[^A-Za-z0-9._ -]+")
#: What a manifest at a URL ends in (``sources/manifest/_rows.py``): never an export's folder.
_MANIFEST_TYPES = frozenset({".csv", ".parquet", ".pq", ".jsonl", ".ndjson"})


def is_export(path: str | os.PathLike[str]) -> bool:
    """True for a folder or a .zip: what ``doccheck run`` reads as an LMS export, not a manifest.

    At a URL: a ``.zip`` is an export, a manifest's type (``.csv``, ``.parquet``, ``.jsonl``...) is
    not, and anything else is an export's folder if its prefix holds anything (one request)."""
    p = resolve(path)
    if isinstance(p, Path):
        return p.is_dir() or (p.is_file() and p.suffix.lower() == ".zip")
    suffix = p.suffix.lower()
    return suffix == ".zip" or (suffix not in _MANIFEST_TYPES and p.is_dir())


def export_campaign(path: str | os.PathLike[str] | UserPath) -> str:
    """The default campaign of an export: its name without ``.zip`` nor a browser's ``(1)``.

    Moodle names the zip ``<course>-<assignment>-<module id>.zip`` and Canvas
    ``<course>-<assignment>_submissions.zip``, and unzipping makes a folder of the same name, so
    both forms of one assignment's download share one campaign. Blackboard names it
    ``gradebook_<course id>_<assignment>_<YYYY-MM-DD-HH-MM-SS>.zip``: the time of the download
    is dropped, or every download would be a campaign of its own.
    """
    p = resolve(path) if isinstance(path, str | os.PathLike) else path
    stem = _COPY_SUFFIX.sub("", p.stem if is_zip(p) else p.name).strip()
    if stem.startswith("gradebook_"):
        stem = _DOWNLOAD_TIME.sub("", stem)
    return stem or "export"


@dataclass(frozen=True)
class Derived:
    """The manifest written for one export and what was recognised in it."""

    manifest: Path
    result: ExportResult


def derive_manifest(
    export: str | os.PathLike[str],
    work_dir: str | os.PathLike[str],
    *,
    lms: str | None = None,
    attempts: str = "latest",
    groups: bool = False,
    limits: ExportLimits = DEFAULT_LIMITS,
    roster: str | os.PathLike[str] | None = None,
) -> Derived:
    """Read ``export``, copy its documents under ``work_dir/<campaign>/`` and write the manifest there.

    Beside it, the sidecar the reports join back (students, refused entries, and with
    ``roster`` the roster's email/section and its students without work).
    """
    source = resolve(export)
    students = read_roster(roster) if roster is not None else None  # a bad roster fails before any copy
    folder = Path(work_dir) / export_campaign(source)
    files = folder / "files"
    with open_export(source) as opened:  # a zip's directory read once (a store's folder listed once)
        result = recognise(list(walk_export(source, limits, opened)), lms=lms, attempts=attempts, groups=groups)
        shutil.rmtree(files, ignore_errors=True)  # last download's copies: never mixed with this one's
        files.mkdir(parents=True)
        paths = {doc.entry: _copy_path(doc) for doc in result.documents}
        for entry in member_order(opened, paths):  # a zip on a store: its bytes read forward
            target = files / paths[entry]
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                copy_member(source, entry, out, limits, opened)
    rows = [{**_row(doc), "path": f"files/{paths[doc.entry]}"} for doc in result.documents]
    manifest = folder / f"{export_campaign(source)}.csv"
    write_manifest(manifest, rows)
    write_sidecar(manifest, result, students, source.name)  # the LMS columns the reports join back, never sent
    return Derived(manifest=manifest, result=result)


def _copy_path(doc: SubmittedFile) -> str:
    """Where one document's copy goes under ``files/``: a folder per document id, its own name."""
    return f"{hashlib.sha256(doc.document_id.encode()).hexdigest()[:16]}/{_safe_name(doc)}"


def _safe_name(doc: SubmittedFile) -> str:
    """The file's own name, made safe for any file system (its extension decides its type)."""
    return _SAFE.sub("_", PurePosixPath(doc.parsed.submitted_file).name).strip(" .") or "file"


def _row(doc: SubmittedFile) -> dict[str, str]:
    p = doc.parsed
    late = "" if p.late is None else str(p.late).lower()
    return {
        "document_id": doc.document_id,
        "name": doc.document_id,
        "lms": p.lms,
        "student_id": p.student_id,
        "student": p.student,
        "late": late,
        "attempt": p.attempt or "",
        "submitted_file": p.submitted_file,
    }


def write_manifest(path: Path, rows: list[dict[str, str]]) -> None:
    """Write ``rows`` as the CSV manifest (``doccheck manifest EXPORT -o FILE`` writes the same)."""
    fields = ["document_id", "path", "name", *LMS_COLUMNS]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def as_manifest(
    path: str | os.PathLike[str],
    work_dir: str | os.PathLike[str],
    *,
    lms: str | None = None,
    attempts: str = "latest",
    roster: str | os.PathLike[str] | None = None,
) -> tuple[str, ExportResult | None]:
    """The manifest to run for ``path``: itself for a manifest file, else the one derived from the export.

    The one hook every entry point calls (CLI, the flow's ``prepare_run``, the dry run, the
    notebook): an export is recognised by being a folder or a .zip (or by ``lms`` being given).
    """
    if lms is None and not is_export(path):
        return str(path), None
    derived = derive_manifest(path, work_dir, lms=lms, attempts=attempts, roster=roster)
    # Absolute: the run records it, and a later ``collect`` (from any folder) finds its sidecar by it.
    return str(derived.manifest.resolve()), derived.result


def review_manifest(
    export: str | os.PathLike[str], out: str | os.PathLike[str], *, lms: str | None = None, attempts: str = "latest"
) -> Derived:
    """Write the manifest doccheck derives from ``export`` to ``out``, for a person to review or edit.

    The documents are copied beside it (``<out stem>_files/``) so that its paths stay inside
    its folder, as a manifest's must. Running it needs ``--campaign <export's campaign>`` to
    share the export's Idempotency-Keys (``doccheck manifest`` prints the command).
    """
    target = Path(out)
    derived = derive_manifest(export, target.parent / f"{target.stem}_files", lms=lms, attempts=attempts)
    with derived.manifest.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    base = target.parent.resolve()
    for row in rows:
        row["path"] = (derived.manifest.parent / row["path"]).resolve().relative_to(base).as_posix()
    write_manifest(target, rows)
    return Derived(manifest=target, result=derived.result)
