"""The three ways an extraction can fail, under one root so callers map them to one row error.

Every failure of :func:`doccheck.extract.extract_text` is an :class:`ExtractionError` with
a message fit for a report (it names the part and the reason, never a library's internal
exception text), so manifest validation rejects one row and the emulator answers one 4xx.
"""

from __future__ import annotations

from doccheck.errors import DocCheckBaseError


class ExtractionError(DocCheckBaseError, ValueError):
    """The file claims a supported type but its bytes cannot be read as that type."""


class UnsupportedFileType(ExtractionError):
    """The file's extension is not one of :data:`doccheck.extract.SUPPORTED_TYPES`."""


class ExtractionLimitExceeded(ExtractionError):
    """The document would take more than a limit of :mod:`doccheck.extract.limits` to read.

    Raised for an inflated size, a part count, a PDF page/object/content size, or when the
    worker process was stopped for its wall time, CPU time or memory. The document may be
    well-formed; it is refused because reading it would cost more than any submission should.
    """


class ExtractionStopped(ExtractionError):
    """The extraction was cut short because its process is shutting down (not the document's fault).

    A server answers this with a retryable 503, never a rejection of the document.
    """


class NotMachineReadable(ExtractionError):
    """The file is a document doccheck recognises, but it holds no text a machine can read.

    Not the student's fault and not a limit: the reason is said in words a person acts on
    (ask for a typed copy, review by hand), never shown as a score of 0. ``reason`` is a
    stable code for counting documents by reason in summaries.
    """

    reason = "not_machine_readable"


class ImageWithoutText(NotMachineReadable):
    """A photo or scan (PNG, JPEG, HEIC...): no text layer at all."""

    reason = "image_without_text"


class ImageOnlyPdf(NotMachineReadable):
    """A PDF whose pages are images (a scan) without a text layer."""

    reason = "image_only_pdf"


class PasswordProtected(NotMachineReadable):
    """A PDF or Office file that needs a password to open."""

    reason = "password_protected"


#: Reason code → class, for the worker's answers (only JSON crosses the process boundary).
NOT_READABLE_REASONS: dict[str, type[NotMachineReadable]] = {
    cls.reason: cls for cls in (NotMachineReadable, ImageWithoutText, ImageOnlyPdf, PasswordProtected)
}
