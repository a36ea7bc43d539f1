"""Text extraction and word counting for the document types the service accepts.

The emulator uses this package to count the words it bills and to compute similarity, and
manifest validation uses the very same rules to reject a row locally (unsupported type,
unreadable or hostile file) before any money is spent. Sharing one implementation keeps the
two sides' word counts, and so the predicted cost, equal.

Reading a document is bounded (``docs/extraction.md``): plain text is decoded in-process
(linear in its size); HTML, DOCX and PDF are parsed in a reused worker process
(:mod:`doccheck.extract.sandbox`) under the limits of :mod:`doccheck.extract.limits`, so a
hostile file costs at most the wall time, CPU and memory those allow, and fails as one
:class:`ExtractionError` with a reason.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from doccheck.extract.errors import ExtractionError, ExtractionLimitExceeded, ExtractionStopped, UnsupportedFileType
from doccheck.extract.limits import DEFAULT_LIMITS, ExtractionLimits, mib
from doccheck.extract.words import count_words as _count_words

__all__ = [
    "DEFAULT_LIMITS",
    "SUPPORTED_TYPES",
    "ExtractionError",
    "ExtractionLimitExceeded",
    "ExtractionLimits",
    "ExtractionStopped",
    "UnsupportedFileType",
    "content_type_for",
    "count_words",
    "extension_of",
    "extract_text",
    "is_supported",
    "words_of",
]

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
_IN_PROCESS = {".txt", ".md"}

_WORD_RE = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)


def extension_of(filename: str) -> str:
    """Lower-case extension with its dot (``"report.PDF"`` → ``".pdf"``), ``""`` when none."""
    return PurePath(filename or "").suffix.lower()


def is_supported(filename: str) -> bool:
    """True when the file name's extension is one the service accepts."""
    return extension_of(filename) in SUPPORTED_TYPES


def content_type_for(filename: str) -> str | None:
    """The MIME type for ``filename`` by extension, or ``None`` when unsupported."""
    return SUPPORTED_TYPES.get(extension_of(filename))


def count_words(text: str) -> int:
    """Number of words: runs of letters/digits, with inner apostrophes or hyphens kept.

    Punctuation and markup-like symbols are not words, so "don't" and "well-known" count
    once and "--" counts zero times. The rule is simple and deterministic so that the
    caller can predict the billed word count exactly.
    """
    return _count_words(text or "")  # numpy over code points, equal to len(_WORD_RE.findall(text)) (issue 10)


def words_of(text: str) -> list[str]:
    """The words of ``text`` in order, lower-cased (used for shingling)."""
    return [m.group(0).lower() for m in _WORD_RE.finditer(text or "")]


def extract_text(data: bytes, filename: str, *, limits: ExtractionLimits = DEFAULT_LIMITS) -> str:
    """Plain text of a document, chosen by the extension of ``filename``, read under ``limits``.

    Raises :class:`UnsupportedFileType` for any other extension,
    :class:`ExtractionLimitExceeded` when reading would pass a limit (size, inflation, pages,
    time, memory), and :class:`ExtractionError` (with a reason) when the bytes are not a
    readable document of that type — never a library-specific exception, so callers map
    it to one clear error per row.
    """
    ext = _checked_extension(filename)
    if len(data) > limits.max_input_bytes:
        raise ExtractionLimitExceeded(f"the file is {len(data)} bytes, over the {mib(limits.max_input_bytes)} limit")
    if ext in _IN_PROCESS:
        return _parse(data, filename, limits)
    from doccheck.extract.sandbox import run_sandboxed

    return run_sandboxed(data, filename, limits)


def _checked_extension(filename: str) -> str:
    ext = extension_of(filename)
    if ext not in SUPPORTED_TYPES:
        shown = ext or "(no extension)"
        raise UnsupportedFileType(f"unsupported file type {shown!r}; supported: {', '.join(sorted(SUPPORTED_TYPES))}")
    return ext


def _parse(data: bytes, filename: str, limits: ExtractionLimits) -> str:
    """The parsers themselves, in whatever process calls this (the worker, or tests/benchmarks)."""
    ext = _checked_extension(filename)
    from doccheck.extract import text as plain

    if ext in _IN_PROCESS:
        return plain.decode_text(data)
    if ext in (".html", ".htm"):
        return plain.html_to_text(plain.decode_text(data))
    if ext == ".docx":
        from doccheck.extract.docx import docx_to_text

        return docx_to_text(data, limits)
    from doccheck.extract.pdf import pdf_to_text

    return pdf_to_text(data, limits)
