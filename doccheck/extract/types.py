"""Which files the service accepts, by extension, and the MIME type it expects for each."""

from __future__ import annotations

from pathlib import PurePath

from doccheck.extract.errors import UnsupportedFileType

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

#: Extension (lower case, with dot) → the MIME type the service expects for it.
SUPPORTED_TYPES: dict[str, str] = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".docx": DOCX_MIME,
    ".pdf": "application/pdf",
}

#: Types decoded in the caller's process: strict decoding is linear in the input size.
IN_PROCESS = frozenset({".txt", ".md"})


def extension_of(filename: str) -> str:
    """Lower-case extension with its dot (``"report.PDF"`` → ``".pdf"``), ``""`` when none."""
    return PurePath(filename or "").suffix.lower()


def is_supported(filename: str) -> bool:
    """True when the file name's extension is one the service accepts."""
    return extension_of(filename) in SUPPORTED_TYPES


def content_type_for(filename: str) -> str | None:
    """The MIME type for ``filename`` by extension, or ``None`` when unsupported."""
    return SUPPORTED_TYPES.get(extension_of(filename))


def checked_extension(filename: str) -> str:
    """The extension of a supported file; :class:`UnsupportedFileType` naming the supported ones otherwise."""
    ext = extension_of(filename)
    if ext not in SUPPORTED_TYPES:
        shown = ext or "(no extension)"
        raise UnsupportedFileType(f"unsupported file type {shown!r}; supported: {', '.join(sorted(SUPPORTED_TYPES))}")
    return ext
