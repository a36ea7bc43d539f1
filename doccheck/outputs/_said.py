"""Each document's status said plainly: checked, checked as extracted text, or not checked and why.

Why: the reports keep machine codes (``status``, ``error_code``) for data teams; an instructor
reads words. A photo of handwriting, a scanned PDF or a locked file is not a score of 0 but a
document nobody could check, and what to do about it differs (ask for a typed copy, an
unlocked copy, review it by hand). One home for those words: the documents table's
``status_text``, the report page and the summaries' counts by reason (:func:`count_by_reason`,
in the dry run too, before anything is paid) all read them from here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from doccheck.extract import IMAGE, IMAGE_ONLY

__all__ = [
    "CHECKED",
    "CHECKED_AS_TEXT",
    "FORMAT_WORDS",
    "REASON_WORDS",
    "TOO_FEW_WORDS",
    "count_by_reason",
    "misnamed_words",
    "reason_key",
    "reason_words",
    "status_text",
]

CHECKED = "checked"
CHECKED_AS_TEXT = "checked as extracted text (the service does not take this file type)"
TOO_FEW_WORDS = "too few words for the AI check"
_SIMILARITY_STILL_RUNS = " (similarity still runs)"

#: Why a document was not checked, by code (a manifest's rejection code or a refused create's),
#: in the words a person acts on. A code not listed is said by its row's own message.
REASON_WORDS: dict[str, str] = {
    "image_without_text": IMAGE,  # the extractor's own words, as the rejected row says them
    "image_only_pdf": IMAGE_ONLY,
    "password_protected": "password-protected: ask for a copy without a password",
    "unsupported_type": "unsupported format",
    "unsupported_file_type": "unsupported format",
    "empty_document": "no words in the document",
    "file_not_found": "file not found",
    "file_too_large": "file too large for the service (over 50 MB)",
    "unreadable_file": "the file could not be read",
    "budget_exceeded": "not sent: over the run's budget",
    "in_doubt": "not sent again: an earlier request may have made a check (doccheck resolve)",
}

#: Each type a file is read as, in the words a person knows it by.
FORMAT_WORDS: dict[str, str] = {
    "pdf": "PDF", "docx": "Word (.docx)", "doc": "Word 97-2003 (.doc)", "odt": "OpenDocument text",
    "ott": "OpenDocument text", "rtf": "Rich Text Format (RTF)", "pptx": "PowerPoint (.pptx)",
    "pages": "Apple Pages", "txt": "plain text", "md": "Markdown", "html": "HTML", "htm": "HTML",
}  # fmt: skip


def misnamed_words(read_as: str | None, named_as: str | None) -> str:
    """A misnamed file said plainly: "read as OpenDocument text: the file is named .docx"."""
    kind = str(read_as or "").lstrip(".")
    named = str(named_as or "").lstrip(".")
    what = FORMAT_WORDS.get(kind, f".{kind}")
    return f"read as {what}: the file is named .{named}" if named else f"read as {what}: the file's name has no type"


#: Statuses of a document not checked (yet), as a person reads them.
_NOT_YET = {"unsent": "not checked yet: not sent", "skipped_budget": "not checked: over the run's budget",
            "in_doubt": "not checked: in doubt (doccheck resolve)"}  # fmt: skip


def reason_words(code: str | None, message: str | None = None) -> str:
    """The reason a document was not checked, in words: the code's words, else its message."""
    if code and code in REASON_WORDS:
        return REASON_WORDS[code]
    if message:
        return message
    return (code or "unknown reason").replace("_", " ")


def status_text(row: Mapping[str, Any]) -> str:
    """A documents-table row's status in words (``status``, ``sent_as``, ``error_code``,
    ``error_message``, ``ai_band``, ``products``, ``misnamed`` as the documents table holds them);
    a misnamed file's words end with what it was read as (:func:`misnamed_words`)."""
    said = _status_words(row)
    if row.get("misnamed"):
        said += f"; {misnamed_words(row.get('read_as'), row.get('named_as'))}"
    return said


def _status_words(row: Mapping[str, Any]) -> str:
    status = row.get("status")
    if status == "submitted":
        said = CHECKED_AS_TEXT if row.get("sent_as") == "text" else CHECKED
        if row.get("ai_band") == "too_short":
            products = row.get("products") or ""
            still = _SIMILARITY_STILL_RUNS if "similarity" in products else ""
            said += f"; {TOO_FEW_WORDS}{still}"
        return said
    if status in _NOT_YET:
        return _NOT_YET[str(status)]
    return f"not checked: {reason_words(row.get('error_code'), row.get('error_message'))}"


def reason_key(code: str | None) -> str:
    """The words a not-checked document is counted under (its code's words, else its code)."""
    return REASON_WORDS.get(str(code), str(code or "rejected").replace("_", " "))


def count_by_reason(rejections: Iterable[Mapping[str, Any]], *, key: str = "code") -> dict[str, int]:
    """Rows not checked, counted by their reason in words (a summary's ``not_checked``, the
    page's list): most first. ``key``: the field holding the code (``error_code`` in reports)."""
    return dict(Counter(reason_key(r.get(key)) for r in rejections).most_common())
