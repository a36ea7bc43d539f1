"""LMS "download all submissions" exports (Moodle, Canvas, Blackboard), read as the LMS writes them.

:func:`read_export` walks a zip or an unzipped folder (bounded, nothing extracted), recognises
the LMS from the names inside (or takes ``lms=``), and gives each entry a student, a
deterministic document id (:func:`make_document_id`) and a kind: a document to check, a link or
receipt that is listed but never sent, an older attempt, or a refusal with its reason and the
student named. :func:`as_manifest` turns an export into the manifest a run reads, and
:func:`read_sidecar` gives the reports what is never sent (students, refusals, roster).
Callers import from here; the modules are private, one per LMS (``_moodle``, ``_canvas``,
``_blackboard``) and one per job (``_walk``, ``_read``, ``_derive``, ``_roster``, ``_sidecar``).
The naming rules and where they come from are in docs/lms.md.
"""

from __future__ import annotations

from doccheck.errors import UnsafeExport
from doccheck.sources.lms._derive import as_manifest, export_campaign, is_export, review_manifest
from doccheck.sources.lms._model import ExportResult, SubmittedFile, make_document_id
from doccheck.sources.lms._read import LMS_NAMES, detect_lms, read_export
from doccheck.sources.lms._roster import no_submission_lines
from doccheck.sources.lms._sidecar import read_sidecar
from doccheck.sources.lms._walk import ExportLimits

__all__ = [
    "LMS_NAMES",
    "ExportLimits",
    "ExportResult",
    "SubmittedFile",
    "UnsafeExport",
    "as_manifest",
    "detect_lms",
    "export_campaign",
    "is_export",
    "make_document_id",
    "no_submission_lines",
    "read_export",
    "read_sidecar",
    "review_manifest",
]
