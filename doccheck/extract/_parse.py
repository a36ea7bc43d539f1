"""Plain text out of a document's bytes, read as what the bytes are: in this process for plain
text, in a bounded worker otherwise.

The file's type is sniffed from its bytes (:mod:`doccheck.extract._sniff`): a ``.docx`` that is
really RTF is read as RTF, and :class:`Extracted` says which type was read and whether the
name disagreed, so a report can say "read as .rtf". The name decides only for the formats
without a signature (plain text, Markdown, HTML).
"""

from __future__ import annotations

from dataclasses import dataclass

from doccheck.errors import ExtractionError, ExtractionLimitExceeded, ImageWithoutText, UnsupportedFileType
from doccheck.extract._file_types import IN_PROCESS, SUPPORTED_TYPES, extension_of, same_format
from doccheck.extract._read_limits import ExtractionLimits, limits_in_force, mib
from doccheck.extract._sniff import IMAGE_TYPES, LOCKED_OFFICE, OTHER_OLE, OTHER_ZIP, magic, sniff

IMAGE = (
    "image without machine-readable text (a photo or scan, e.g. handwriting): no AI or similarity result; "
    "ask for a typed copy or review it by hand"
)
#: Types whose text is read from their markup by name alone (no signature to sniff).
_NAMED = frozenset({".txt", ".md", ".html", ".htm"})


@dataclass(frozen=True)
class Extracted:
    """A document's text and what it was read as."""

    text: str
    #: The type read (an extension: ``".rtf"``), from the bytes where they have a signature.
    read_as: str
    #: True when the file's extension names another format than its bytes (e.g. RTF named ``.docx``).
    misnamed: bool


def read_as_named(filename: str, kind: str) -> str:
    """What a file named ``filename`` is read as, given that bytes like its own were read as ``kind``
    (under any name): ``kind`` for bytes with a signature, the name's own type for bytes without
    one (plain text, Markdown and HTML are told apart by the name alone)."""
    return (extension_of(filename) or kind) if kind in _NAMED else kind


def extract_text(data: bytes, filename: str, *, limits: ExtractionLimits | None = None) -> str:
    """Plain text of a document, read as what its bytes are, under ``limits`` (see :func:`extract`)."""
    return extract(data, filename, limits=limits).text


def read_in_process(data: bytes, filename: str) -> bool:
    """Whether :func:`extract` reads these bytes in this process (plain text and Markdown, no
    signature): counting their words costs less than asking a store for the count (a query)."""
    return extension_of(filename) in IN_PROCESS and magic(data) is None


def extract(data: bytes, filename: str, *, limits: ExtractionLimits | None = None) -> Extracted:
    """Text of a document and the type it was read as.

    Raises :class:`~doccheck.errors.UnsupportedFileType` for a format doccheck does not
    read, :class:`~doccheck.errors.NotMachineReadable` (a photo, an image-only PDF, a
    password) with the reason in words, :class:`~doccheck.errors.ExtractionLimitExceeded`
    when reading would pass a limit, and :class:`~doccheck.errors.ExtractionError` (with
    a reason) when the bytes are not readable — never a library-specific exception. ``limits``:
    the settings' (:func:`~doccheck.extract._read_limits.limits_in_force`) unless given.
    """
    limits = limits if limits is not None else limits_in_force()
    ext = extension_of(filename)
    head = magic(data)
    if head is None and ext not in SUPPORTED_TYPES and ext not in IMAGE_TYPES:
        raise _unsupported(ext)
    if len(data) > limits.max_input_bytes:
        raise ExtractionLimitExceeded(f"the file is {len(data)} bytes, over the {mib(limits.max_input_bytes)} limit")
    if head in IMAGE_TYPES or (head is None and ext in IMAGE_TYPES):
        raise ImageWithoutText(IMAGE)
    if head is None and ext in IN_PROCESS:
        text, kind = parse(data, filename, limits)
    else:
        from doccheck.extract._sandbox import run_sandboxed

        text, kind = run_sandboxed(data, filename, limits)
    return Extracted(text=text, read_as=kind, misnamed=not same_format(ext, kind))


def parse(data: bytes, filename: str, limits: ExtractionLimits) -> tuple[str, str]:
    """The parsers themselves, unbounded in time, in whatever process calls this (the worker, or
    tests and benchmarks that measure the parsers alone): the text and the type it was read as."""
    ext = extension_of(filename)
    kind = sniff(data, limits)
    if kind is None:
        if ext not in _NAMED:
            raise ExtractionError(
                f"not a readable {ext or 'document'} file (its bytes are no document type doccheck knows)"
            )
        kind = ext
    return _read(kind, data, limits), kind


def _read(kind: str, data: bytes, limits: ExtractionLimits) -> str:  # noqa: PLR0911 - one line a format
    from doccheck.extract import _text as plain

    if kind in (".txt", ".md"):
        return plain.decode_text(data)
    if kind in (".html", ".htm"):
        return plain.html_to_text(plain.decode_text(data))
    if kind == ".docx":
        from doccheck.extract._docx import docx_to_text

        return docx_to_text(data, limits)
    if kind == ".pdf":
        from doccheck.extract._pdf import pdf_to_text

        return pdf_to_text(data, limits)
    if kind in (".odt", ".ott"):
        from doccheck.extract._odt import odt_to_text

        return odt_to_text(data, limits)
    if kind == ".pptx":
        from doccheck.extract._pptx import pptx_to_text

        return pptx_to_text(data, limits)
    if kind == ".rtf":
        from doccheck.extract._rtf import rtf_to_text

        return rtf_to_text(data, limits)
    if kind == ".doc":
        from doccheck.extract._ole import doc_to_text

        return doc_to_text(data, limits)
    if kind == ".pages":
        from doccheck.extract._pages import pages_to_text

        return pages_to_text(data, limits)
    raise _unreadable(kind)


def _unreadable(kind: str) -> ExtractionError:
    """The error for a recognised type doccheck does not read."""
    from doccheck.errors import PasswordProtected

    if kind == LOCKED_OFFICE:
        return PasswordProtected("password-protected Office document: ask the student for a copy without a password")
    if kind in IMAGE_TYPES:
        return ImageWithoutText(IMAGE)
    what = {
        ".ppt": "a PowerPoint 97-2003 .ppt (save it as .pptx or PDF)",
        OTHER_OLE: "an Office 97-2003 file that is not a Word document",
        OTHER_ZIP: "a zip archive that is not a document doccheck reads (e.g. a spreadsheet or a folder of files)",
    }.get(kind, kind)
    return UnsupportedFileType(f"unsupported format: {what}")


def _unsupported(ext: str) -> UnsupportedFileType:
    shown = ext or "(no extension)"
    return UnsupportedFileType(
        f"unsupported format: file type {shown!r}; supported: {', '.join(sorted(SUPPORTED_TYPES))}"
    )
