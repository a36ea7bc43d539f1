"""Plain text out of a document's bytes: in this process for plain text, in a bounded worker otherwise."""

from __future__ import annotations

from doccheck.extract.errors import ExtractionLimitExceeded
from doccheck.extract.limits import DEFAULT_LIMITS, ExtractionLimits, mib
from doccheck.extract.types import IN_PROCESS, checked_extension


def extract_text(data: bytes, filename: str, *, limits: ExtractionLimits = DEFAULT_LIMITS) -> str:
    """Plain text of a document, chosen by the extension of ``filename``, read under ``limits``.

    Raises :class:`~doccheck.extract.errors.UnsupportedFileType` for any other extension,
    :class:`~doccheck.extract.errors.ExtractionLimitExceeded` when reading would pass a limit (size,
    inflation, pages, time, memory), and :class:`~doccheck.extract.errors.ExtractionError` (with a
    reason) when the bytes are not a readable document of that type — never a library-specific
    exception, so callers map it to one clear error per row.
    """
    ext = checked_extension(filename)
    if len(data) > limits.max_input_bytes:
        raise ExtractionLimitExceeded(f"the file is {len(data)} bytes, over the {mib(limits.max_input_bytes)} limit")
    if ext in IN_PROCESS:
        return parse(data, filename, limits)
    from doccheck.extract.sandbox import run_sandboxed

    return run_sandboxed(data, filename, limits)


def parse(data: bytes, filename: str, limits: ExtractionLimits) -> str:
    """The parsers themselves, unbounded in time, in whatever process calls this (the worker, or
    tests and benchmarks that measure the parsers alone)."""
    ext = checked_extension(filename)
    from doccheck.extract import text as plain

    if ext in IN_PROCESS:
        return plain.decode_text(data)
    if ext in (".html", ".htm"):
        return plain.html_to_text(plain.decode_text(data))
    if ext == ".docx":
        from doccheck.extract.docx import docx_to_text

        return docx_to_text(data, limits)
    from doccheck.extract.pdf import pdf_to_text

    return pdf_to_text(data, limits)
