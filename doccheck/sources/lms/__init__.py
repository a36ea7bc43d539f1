"""LMS "download all submissions" exports (Moodle, Canvas, Blackboard), read as the LMS writes them.

:func:`read_export` walks a zip or an unzipped folder (:mod:`.walk`, bounded, nothing
extracted), recognises the LMS from the names inside (or takes ``lms=``), and gives each entry
a student, a deterministic document id and a kind: a document to check, a link or receipt that
is listed but never sent, an older attempt, or a refusal with its reason and the student named.
The naming rules and where they come from are in docs/lms.md.
"""

from __future__ import annotations

from doccheck.errors import UnsafeExport
from doccheck.sources.lms._read import LMS_NAMES, detect_lms, read_export
from doccheck.sources.lms.model import ExportResult, SubmittedFile
from doccheck.sources.lms.walk import ExportLimits

__all__ = ["LMS_NAMES", "ExportLimits", "ExportResult", "SubmittedFile", "UnsafeExport", "detect_lms", "read_export"]
