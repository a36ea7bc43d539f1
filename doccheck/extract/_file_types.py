"""Which files the service accepts, by extension, and the MIME type it expects for each.

:data:`SUPPORTED_TYPES` is what doccheck reads (and what the bundled emulator accepts); what a
file *is* is decided by its bytes (:mod:`doccheck.extract._sniff`), the extension only names
the formats without a signature (plain text, Markdown, HTML).
"""

from __future__ import annotations

from pathlib import PurePath

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

#: Extension (lower case, with dot) → the MIME type the service expects for it.
SUPPORTED_TYPES: dict[str, str] = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".docx": DOCX_MIME,
    ".pdf": "application/pdf",
    ".doc": "application/msword",
    ".odt": "application/vnd.oasis.opendocument.text",
    ".ott": "application/vnd.oasis.opendocument.text-template",
    ".rtf": "application/rtf",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".pages": "application/vnd.apple.pages",
}

#: Extensions of the same format (the canonical one of each family is the value).
ALIASES = {".htm": ".html", ".ott": ".odt", ".md": ".txt", ".jpeg": ".jpg", ".tif": ".tiff", ".heif": ".heic"}


def same_format(ext: str, kind: str) -> bool:
    """True when extension ``ext`` names the format ``kind`` (an extension sniffed from the bytes)."""
    return ALIASES.get(ext, ext) == ALIASES.get(kind, kind)


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
