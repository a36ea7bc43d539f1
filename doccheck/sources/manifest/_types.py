"""The values a manifest read produces: documents, rejections, their codes, and the one error.

Kept apart from the readers so that every reader and the validation share one vocabulary,
and so that ``doccheck.outputs`` and the ledger can import :class:`Rejection` cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from doccheck.extract import extension_of, same_format

if TYPE_CHECKING:
    from doccheck.storage import UserPath

__all__ = [
    "ManifestDocument",
    "ManifestResult",
    "RejectCode",
    "Rejection",
    "Row",
    "RowCursor",
    "RowProblem",
    "RowStart",
]


class RejectCode:
    """The stable machine codes of :attr:`Rejection.code` (documented in docs/manifest.md)."""

    MISSING_ID = "missing_id"
    DUPLICATE_ID = "duplicate_id"
    INVALID_ROW = (
        "invalid_row"  # JSONL: not JSON / not an object / too deep / too long / not UTF-8; CSV: too many fields
    )
    UNTERMINATED_QUOTE = "unterminated_quote"  # CSV: a quote that swallowed the following lines
    INVALID_VALUE = (
        "invalid_value"  # a NUL, a lone surrogate, a non-finite or over-long number, binary that is not UTF-8
    )
    VALUE_TOO_LONG = "value_too_long"  # document_id, name or metadata over what the service accepts
    TEXT_TOO_LARGE = "text_too_large"  # a text row whose request body is over the service's limit
    INVALID_PRODUCTS = "invalid_products"
    BOTH_PATH_AND_TEXT = "both_path_and_text"
    NO_PATH_OR_TEXT = "no_path_or_text"
    PATH_ESCAPES_MANIFEST_DIR = "path_escapes_manifest_dir"
    FILE_NOT_FOUND = "file_not_found"
    NOT_A_FILE = "not_a_file"
    UNREADABLE_FILE = "unreadable_file"
    UNSUPPORTED_TYPE = "unsupported_type"
    # A recognised document with no machine-readable text (issue 41): the reason in words, never 0 words.
    IMAGE_WITHOUT_TEXT = "image_without_text"  # a photo or scan (PNG, JPEG, HEIC...)
    IMAGE_ONLY_PDF = "image_only_pdf"  # a PDF of scanned pages without a text layer
    PASSWORD_PROTECTED = "password_protected"  # a PDF or Office file locked with a password
    FILE_TOO_LARGE = "file_too_large"
    EMPTY_DOCUMENT = "empty_document"
    INVALID_TEXT = "invalid_text"
    INVALID_PATH = "invalid_path"


@dataclass(frozen=True)
class Rejection:
    """One rejected row: it costs nothing and is always reported.

    ``document_id`` is None when the row has none or when it could not be stored safely
    (a NUL or a lone surrogate); the ``reason`` then shows it escaped.
    """

    row_number: int  # 1-based data row (header not counted); JSONL: the line number
    document_id: str | None
    field: str  # the column at fault
    code: str  # a RejectCode value
    reason: str  # a sentence naming the row, the field and why


@dataclass(frozen=True)
class ManifestDocument:
    """One valid row, ready to be planned.

    ``content_hash`` is the SHA-256 (hex) of exactly the bytes the service will receive:
    the UTF-8 text, or the file's bytes. ``metadata`` holds only allowlisted columns plus
    ``document_id``, because it is sent to the service.
    """

    row_number: int
    document_id: str
    name: str
    products: tuple[str, ...]  # sorted, unique
    text: str | None
    path: UserPath | None  # resolved, inside the manifest's folder or prefix (a URL's path on its store)
    size_bytes: int
    content_hash: str
    words: int | None  # None when unknown (large .docx/.pdf)
    metadata: dict[str, str]
    #: The type a file was read as, from its bytes (``".odt"``; None: a text row, or a file not read).
    read_as: str | None = field(default=None, kw_only=True)

    @property
    def named_as(self) -> str:
        """The type the file's name says (its extension, ``""`` for a text row or a file without one)."""
        return extension_of(self.path.name) if self.path is not None else ""

    @property
    def misnamed(self) -> bool:
        """True when the file's name says another type than its bytes (e.g. an ``.odt`` named ``.docx``)."""
        return self.read_as is not None and not same_format(self.named_as, self.read_as)


@dataclass(frozen=True)
class ManifestResult:
    """Every valid document and every rejection of one manifest, in row order."""

    documents: list[ManifestDocument]
    rejections: list[Rejection]
    source: UserPath


#: One row as a reader gives it: column → text (None = not given).
Row = dict[str, str | None]


@dataclass(frozen=True)
class RowProblem:
    """A row a reader could not turn into a :data:`Row`; validation makes it a rejection.

    ``document_id`` is the row's id when the reader could still see it (unchecked: the
    validation decides whether it is safe to keep).
    """

    field: str
    code: str
    why: str
    document_id: str | None = None


@dataclass
class RowCursor:
    """Where the row a reader yielded last begins in the file; the reader sets it before each yield.

    Why: a real run records the manifest once and re-reads one batch at a time (issue 10), so
    it needs to seek straight to a batch's first row. ``offset`` is the byte offset of the
    row's first physical line (CSV: after any blank lines before it; the BOM counted), None
    when the row has no start of its own (a line swallowed by an unterminated CSV quote) or
    the format has no byte offsets (Parquet). ``line`` is the physical line at ``offset``.
    """

    offset: int | None = None
    line: int | None = None


@dataclass(frozen=True)
class RowStart:
    """Read from this row on, not from the first: ``row`` as :attr:`Rejection.row_number`.

    ``offset``/``line`` are a :class:`RowCursor`'s for that row (CSV, JSONL); Parquet uses
    ``row`` only. Rows are numbered as in a full read; whole-manifest checks that need
    earlier rows (duplicate ids) only see the rows read from here.
    """

    row: int
    offset: int = 0
    line: int = 1
