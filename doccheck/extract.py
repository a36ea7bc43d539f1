"""Text extraction and word counting for the document types the service accepts.

Pure and dependency-light on purpose: the emulator uses it to count the words it bills
and to compute similarity, and manifest validation uses the very same rules to reject a
row locally (unsupported type, unreadable file) before any money is spent. Sharing one
implementation keeps the two sides' word counts — and so the predicted cost — equal.
"""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser
from pathlib import PurePath

from doccheck.errors import DocCheckBaseError

__all__ = [
    "SUPPORTED_TYPES",
    "ExtractionError",
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

_WORD_RE = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)


class ExtractionError(DocCheckBaseError, ValueError):
    """The file claims a supported type but its bytes cannot be read as that type."""


class UnsupportedFileType(ExtractionError):
    """The file's extension is not one of :data:`SUPPORTED_TYPES`."""


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
    return sum(1 for _ in _WORD_RE.finditer(text or ""))


def words_of(text: str) -> list[str]:
    """The words of ``text`` in order, lower-cased (used for shingling)."""
    return [m.group(0).lower() for m in _WORD_RE.finditer(text or "")]


def extract_text(data: bytes, filename: str) -> str:
    """Plain text of a document, chosen by the extension of ``filename``.

    Raises :class:`UnsupportedFileType` for any other extension and
    :class:`ExtractionError` (with a reason) when the bytes are not a readable document
    of that type — never a library-specific exception, so callers map it to one clear
    error per row.
    """
    ext = extension_of(filename)
    if ext not in SUPPORTED_TYPES:
        shown = ext or "(no extension)"
        raise UnsupportedFileType(
            f"unsupported file type {shown!r}; supported: {', '.join(sorted(SUPPORTED_TYPES))}"
        )
    if ext in (".txt", ".md"):
        return _decode_text(data)
    if ext in (".html", ".htm"):
        return _html_to_text(_decode_text(data))
    if ext == ".docx":
        return _docx_to_text(data)
    return _pdf_to_text(data)


def _decode_text(data: bytes) -> str:
    """UTF-8 (BOM tolerated) or BOM-marked UTF-16; anything else is refused, not guessed."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ExtractionError(f"invalid UTF-16 text at byte {exc.start}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionError(f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    if "\x00" in text:
        raise ExtractionError("text file contains NUL bytes (binary data?)")
    return text


class _TextCollector(HTMLParser):
    """Collects visible text, skipping script/style, with breaks at block elements."""

    _SKIP = {"script", "style", "head", "noscript", "template"}
    _BLOCK = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip_depth += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skip_depth:
            self._skip_depth -= 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self.parts.append(data)


def _html_to_text(html: str) -> str:
    parser = _TextCollector()
    try:
        parser.feed(html)
        parser.close()
    except Exception as exc:  # noqa: BLE001 - html.parser is lenient; this is a last resort
        raise ExtractionError(f"unreadable HTML: {type(exc).__name__}") from None
    text = "".join(parser.parts)
    return re.sub(r"[ \t]+", " ", re.sub(r"\n\s*\n+", "\n\n", text)).strip()


def _docx_to_text(data: bytes) -> str:
    try:
        import docx  # python-docx; imported lazily, it is slow to import

        document = docx.Document(io.BytesIO(data))
        paragraphs = [p.text for p in document.paragraphs]
        for table in document.tables:
            for row in table.rows:
                paragraphs.extend(cell.text for cell in row.cells)
    except Exception as exc:  # noqa: BLE001 - python-docx raises many unrelated types for a corrupt file
        raise ExtractionError(f"not a readable .docx file ({type(exc).__name__})") from None
    return "\n".join(paragraphs).strip()


def _pdf_to_text(data: bytes) -> str:
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise ExtractionError("not a PDF file (missing %PDF header)")
    try:
        import logging

        from pypdf import PdfReader

        logging.getLogger("pypdf").setLevel(logging.ERROR)
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ExtractionError("encrypted PDF files are not supported")
        pages = [page.extract_text() or "" for page in reader.pages]
    except ExtractionError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many unrelated types for a corrupt file
        raise ExtractionError(f"not a readable PDF file ({type(exc).__name__})") from None
    return "\n".join(pages).strip()
