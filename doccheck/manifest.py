"""Read and validate a manifest of documents (CSV, Parquet or JSONL) before anything is sent.

Every row is validated locally, and one bad row never sinks the batch: a row that would
fail at the service (or cost money for nothing) becomes a :class:`Rejection` with a stable
machine code and a sentence naming the row, the field and the reason. Rejected rows cost
nothing and are always reported. Only problems with the manifest as a whole (unreadable
file, no ``document_id`` column, an allowlisted metadata column that does not exist) raise
:class:`ManifestError`, because they are configuration errors, not data.

Files are hashed while streamed; a file is read whole into memory at most once (files up to
the multipart limit, to extract and count their words for the dry-run plan). See
``docs/manifest.md`` for the format, the rules and the reject codes.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doccheck import domain
from doccheck.errors import DocCheckBaseError
from doccheck.extract import (
    SUPPORTED_TYPES,
    ExtractionError,
    count_words,
    extension_of,
    extract_text,
)

__all__ = [
    "KNOWN_PRODUCTS",
    "MAX_FILE_BYTES",
    "MULTIPART_MAX_BYTES",
    "RESERVED_COLUMNS",
    "ManifestDocument",
    "ManifestError",
    "ManifestResult",
    "Rejection",
    "RejectCode",
    "parse_products",
    "read_manifest",
]

#: Files up to this size are sent as multipart and read whole once (to extract their words).
MULTIPART_MAX_BYTES = domain.MULTIPART_MAX_BYTES
#: Files above this size cannot be sent at all (the upload limit of the interface).
MAX_FILE_BYTES = domain.UPLOAD_MAX_BYTES

KNOWN_PRODUCTS: frozenset[str] = frozenset(domain.PRODUCTS)
#: Columns with a meaning of their own; every other column is candidate metadata.
RESERVED_COLUMNS: frozenset[str] = frozenset({"document_id", "path", "text", "name", "products"})

_PRODUCT_SEPARATORS = re.compile(r"[;|,]")
_CHUNK = 1024 * 1024
_CSV_FIELD_LIMIT = 2**31 - 1
_ESCAPE_HINT = "paths are relative to the manifest's folder and must stay inside it"


class RejectCode:
    """The stable machine codes of :attr:`Rejection.code` (documented in docs/manifest.md)."""

    MISSING_ID = "missing_id"
    DUPLICATE_ID = "duplicate_id"
    INVALID_ROW = "invalid_row"  # a JSONL line that is not a JSON object; a CSV row with too many fields
    INVALID_PRODUCTS = "invalid_products"
    BOTH_PATH_AND_TEXT = "both_path_and_text"
    NO_PATH_OR_TEXT = "no_path_or_text"
    PATH_ESCAPES_MANIFEST_DIR = "path_escapes_manifest_dir"
    FILE_NOT_FOUND = "file_not_found"
    NOT_A_FILE = "not_a_file"
    UNREADABLE_FILE = "unreadable_file"
    UNSUPPORTED_TYPE = "unsupported_type"
    FILE_TOO_LARGE = "file_too_large"
    EMPTY_DOCUMENT = "empty_document"
    INVALID_TEXT = "invalid_text"
    INVALID_PATH = "invalid_path"


class ManifestError(DocCheckBaseError, ValueError):
    """The manifest as a whole cannot be used (unreadable, no ``document_id`` column, bad config).

    The message names the file and the reason; it never carries document contents.
    """


@dataclass(frozen=True)
class Rejection:
    """One rejected row: it costs nothing and is always reported."""

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
    path: Path | None  # resolved, inside the manifest's folder
    size_bytes: int
    content_hash: str
    words: int | None  # None when unknown (large .docx/.pdf)
    metadata: dict[str, str]


@dataclass(frozen=True)
class ManifestResult:
    """Every valid document and every rejection of one manifest, in row order."""

    documents: list[ManifestDocument]
    rejections: list[Rejection]
    source: Path


def parse_products(value: str | Iterable[str] | None, default: Sequence[str] = ("ai",)) -> tuple[str, ...]:
    """Parse a product list (``"ai;similarity"``, ``"ai|similarity"``, ``"ai,similarity"`` or a list).

    Empty → ``default``. Returns a sorted tuple without duplicates. Raises ``ValueError``
    naming the unknown values, so callers can turn it into a row rejection or a config error.
    """
    if value is None:
        tokens: list[str] = []
    elif isinstance(value, str):
        tokens = _PRODUCT_SEPARATORS.split(value)
    else:
        tokens = [t for item in value for t in _PRODUCT_SEPARATORS.split(str(item))]
    cleaned = [t.strip().lower() for t in tokens if t.strip()]
    if not cleaned:
        if not default:
            raise ValueError("no products given")
        return parse_products(list(default), default=())
    unknown = sorted({t for t in cleaned if t not in KNOWN_PRODUCTS})
    if unknown:
        raise ValueError(
            f"unknown product(s) {', '.join(repr(u) for u in unknown)}; "
            f"allowed: {', '.join(sorted(KNOWN_PRODUCTS))}"
        )
    return tuple(sorted(set(cleaned)))


def read_manifest(
    path: str | os.PathLike[str],
    *,
    default_products: Sequence[str] = ("ai",),
    metadata_columns: Sequence[str] = (),
) -> ManifestResult:
    """Read ``path`` (by extension: .csv, .parquet/.pq, .jsonl/.ndjson) and validate every row.

    ``default_products`` apply to rows whose ``products`` cell is empty. ``metadata_columns``
    is the allowlist of columns sent to the service as metadata (``document_id`` always is).
    Raises :class:`ManifestError` for problems of the whole manifest or configuration.
    """
    source = Path(path)
    try:
        defaults = parse_products(list(default_products), default=())
    except ValueError as exc:
        raise ManifestError(f"invalid default products: {exc}") from None
    allowlist = _clean_allowlist(metadata_columns)
    columns, rows = _read_rows(source)
    if "document_id" not in columns:
        raise ManifestError(
            f"manifest {source}: required column 'document_id' is missing "
            f"(columns found: {', '.join(columns) or 'none'})"
        )
    unknown = [c for c in allowlist if c not in columns]
    if unknown:
        raise ManifestError(
            f"manifest {source}: metadata column(s) {', '.join(repr(c) for c in unknown)} "
            f"not found (columns found: {', '.join(columns)})"
        )

    base_dir = source.resolve().parent
    documents: list[ManifestDocument] = []
    rejections: list[Rejection] = []
    seen_ids: dict[str, int] = {}
    for row_number, row in rows:
        outcome = _validate_row(row_number, row, base_dir, defaults, allowlist, seen_ids)
        if isinstance(outcome, Rejection):
            rejections.append(outcome)
        else:
            documents.append(outcome)
    return ManifestResult(documents=documents, rejections=rejections, source=source)


# --------------------------------------------------------------------------- reading


def _clean_allowlist(metadata_columns: Sequence[str] | str) -> list[str]:
    """Normalise the allowlist (a comma-separated string is accepted for CLI convenience)."""
    if isinstance(metadata_columns, str):
        metadata_columns = metadata_columns.split(",")
    allowlist: list[str] = []
    for raw in metadata_columns:
        name = str(raw).strip()
        if not name or name == "document_id" or name in allowlist:
            continue
        if name in RESERVED_COLUMNS:
            raise ManifestError(
                f"column {name!r} cannot be sent as metadata (reserved: "
                f"{', '.join(sorted(RESERVED_COLUMNS - {'document_id'}))})"
            )
        allowlist.append(name)
    return allowlist


_Row = dict[str, str | None]


def _read_rows(source: Path) -> tuple[list[str], Iterator[tuple[int, _Row | str]]]:
    """Columns and an iterator of (row_number, row) — or (line, error text) for a bad JSONL line."""
    if not source.exists():
        raise ManifestError(f"manifest {source} does not exist")
    if not source.is_file():
        raise ManifestError(f"manifest {source} is not a file")
    ext = source.suffix.lower()
    if ext == ".csv":
        return _read_csv(source)
    if ext in (".parquet", ".pq"):
        return _read_parquet(source)
    if ext in (".jsonl", ".ndjson"):
        return _read_jsonl(source)
    raise ManifestError(
        f"manifest {source}: unsupported extension {ext or '(none)'!r}; use .csv, .parquet or .jsonl"
    )


def _read_csv(source: Path) -> tuple[list[str], Iterator[tuple[int, _Row | str]]]:
    """CSV through the standard ``csv`` module rather than pandas, because it lets one
    ragged row (too many fields) become one rejection instead of sinking the manifest,
    and it reports duplicate header names instead of silently renaming them."""
    try:
        with source.open("r", encoding="utf-8-sig", newline="") as handle:
            content = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"manifest {source} is not a readable CSV file: {_short(exc)}") from None
    _allow_large_csv_fields()
    reader = csv.reader(io.StringIO(content, newline=""))
    try:
        header = next(reader, None)
        while header is not None and not any(cell.strip() for cell in header):
            header = next(reader, None)  # leading blank lines
        if header is None:
            raise ManifestError(f"manifest {source} is empty (no header row)")
        columns = [c.strip() for c in header]
        _check_columns(source, columns)
        records: list[tuple[int, _Row | str]] = []
        index = 0
        for cells in reader:
            if not cells or not any(cell.strip() for cell in cells):
                continue  # blank line
            index += 1
            if len(cells) > len(columns):
                records.append(
                    (index, f"the row has {len(cells)} fields but the header has {len(columns)} (unquoted comma?)")
                )
                continue
            # A CSV cannot tell an empty cell from a missing one: both mean "not given".
            records.append((index, {c: (cells[i] if i < len(cells) and cells[i] != "" else None) for i, c in enumerate(columns)}))
    except csv.Error as exc:
        raise ManifestError(f"manifest {source} is not a readable CSV file: line {reader.line_num}: {exc}") from None
    return columns, iter(records)


def _allow_large_csv_fields() -> None:
    """A whole essay in a ``text`` cell is longer than the csv module's 128 KiB default."""
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)


def _check_columns(source: Path, columns: list[str]) -> None:
    seen: set[str] = set()
    for column in columns:
        if column and column in seen:
            raise ManifestError(f"manifest {source}: column {column!r} appears more than once in the header")
        seen.add(column)


def _read_parquet(source: Path) -> tuple[list[str], Iterator[tuple[int, _Row | str]]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(source)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several unrelated types for corrupt files
        raise ManifestError(f"manifest {source} is not a readable Parquet file: {_short(exc)}") from None
    columns = [str(c).strip() for c in table.column_names]
    _check_columns(source, columns)
    table = table.rename_columns(columns)

    def rows() -> Iterator[tuple[int, _Row | str]]:
        for index, record in enumerate(table.to_pylist(), start=1):
            yield index, {k: _as_text(v) for k, v in record.items()}

    return columns, rows()


def _read_jsonl(source: Path) -> tuple[list[str], Iterator[tuple[int, _Row | str]]]:
    parsed: list[tuple[int, _Row | str]] = []
    columns: list[str] = []
    try:
        with source.open("r", encoding="utf-8-sig") as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    parsed.append((line_number, f"line is not valid JSON ({exc.msg})"))
                    continue
                if not isinstance(value, dict):
                    parsed.append((line_number, f"line is a JSON {type(value).__name__}, not an object"))
                    continue
                record = {str(k).strip(): _as_text(v) for k, v in value.items()}
                for key in record:
                    if key not in columns:
                        columns.append(key)
                parsed.append((line_number, record))
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"manifest {source} is not a readable JSONL file: {_short(exc)}") from None
    return columns, iter(parsed)


def _as_text(value: Any) -> str | None:
    """Every cell as a string (or None), whatever type the file stored it as."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value != value:  # NaN
        return None
    if isinstance(value, (list, tuple)):
        # A product list stored as an array; a JSON text keeps other nested values readable.
        if all(isinstance(v, str) for v in value):
            return ";".join(value)
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


# --------------------------------------------------------------------------- validation


class _Reject(Exception):
    def __init__(self, field: str, code: str, why: str) -> None:
        super().__init__(why)
        self.field, self.code, self.why = field, code, why


def _validate_row(
    row_number: int,
    row: _Row | str,
    base_dir: Path,
    defaults: tuple[str, ...],
    allowlist: list[str],
    seen_ids: dict[str, int],
) -> ManifestDocument | Rejection:
    document_id: str | None = None
    try:
        if isinstance(row, str):
            raise _Reject("row", RejectCode.INVALID_ROW, row)
        raw_id = row.get("document_id")
        document_id = raw_id.strip() if raw_id is not None else None
        if not document_id:
            document_id = None
            raise _Reject("document_id", RejectCode.MISSING_ID, "empty or missing")
        if document_id in seen_ids:
            raise _Reject(
                "document_id",
                RejectCode.DUPLICATE_ID,
                f"{document_id!r} is already used by row {seen_ids[document_id]}",
            )
        seen_ids[document_id] = row_number
        try:
            products = parse_products(row.get("products"), defaults)
        except ValueError as exc:
            raise _Reject("products", RejectCode.INVALID_PRODUCTS, str(exc)) from None
        name = (row.get("name") or "").strip()
        metadata = {"document_id": document_id}
        for column in allowlist:
            metadata[column] = row.get(column) or ""
        raw_path = row.get("path")
        raw_path = raw_path.strip() if raw_path is not None else None
        text = row.get("text")
        if raw_path and text:
            raise _Reject("path", RejectCode.BOTH_PATH_AND_TEXT, "both 'path' and 'text' are given; give exactly one")
        if raw_path:
            resolved, size, digest, words = _check_file(raw_path, base_dir)
            return ManifestDocument(
                row_number=row_number,
                document_id=document_id,
                name=name or Path(raw_path).name,
                products=products,
                text=None,
                path=resolved,
                size_bytes=size,
                content_hash=digest,
                words=words,
                metadata=metadata,
            )
        if text is None:
            raise _Reject("path", RejectCode.NO_PATH_OR_TEXT, "neither 'path' nor 'text' is given; give exactly one")
        if not text.strip():
            raise _Reject("text", RejectCode.EMPTY_DOCUMENT, "the text is empty or only whitespace")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _Reject(
                "text", RejectCode.INVALID_TEXT, f"the text is not valid Unicode (character {exc.start})"
            ) from None
        words = count_words(text)
        if words == 0:
            raise _Reject("text", RejectCode.EMPTY_DOCUMENT, "the text has no words (only punctuation or symbols)")
        return ManifestDocument(
            row_number=row_number,
            document_id=document_id,
            name=name or document_id,
            products=products,
            text=text,
            path=None,
            size_bytes=len(data),
            content_hash=hashlib.sha256(data).hexdigest(),
            words=words,
            metadata=metadata,
        )
    except _Reject as rej:
        who = f"row {row_number}" + (f" (document_id {document_id!r})" if document_id else "")
        return Rejection(
            row_number=row_number,
            document_id=document_id,
            field=rej.field,
            code=rej.code,
            reason=f"{who}: {rej.field}: {rej.why}",
        )


def _check_file(raw_path: str, base_dir: Path) -> tuple[Path, int, str, int | None]:
    """Resolve, confine, size, type-check, hash and count one file; raise _Reject when unusable."""
    if "\x00" in raw_path:
        raise _Reject("path", RejectCode.INVALID_PATH, "the path contains a NUL character")
    given = Path(raw_path)
    if given.is_absolute() or given.drive or raw_path.startswith(("/", "\\")):
        raise _Reject(
            "path", RejectCode.PATH_ESCAPES_MANIFEST_DIR, f"{raw_path!r} is an absolute path; {_ESCAPE_HINT}"
        )
    try:
        resolved = (base_dir / given).resolve()  # follows symlinks
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise _Reject("path", RejectCode.UNREADABLE_FILE, f"{raw_path!r} cannot be resolved ({_short(exc)})") from None
    if not resolved.is_relative_to(base_dir):
        via = "resolves (through '..' or a symbolic link)"
        raise _Reject(
            "path",
            RejectCode.PATH_ESCAPES_MANIFEST_DIR,
            f"{raw_path!r} {via} outside the manifest's folder; {_ESCAPE_HINT}",
        )
    try:
        exists, regular = resolved.exists(), resolved.is_file()
    except OSError as exc:  # e.g. a name too long for the file system
        raise _Reject("path", RejectCode.INVALID_PATH, f"{raw_path[:200]!r} cannot be used ({_os_reason(exc)})") from None
    if not exists:
        raise _Reject("path", RejectCode.FILE_NOT_FOUND, f"file {raw_path!r} does not exist")
    if not regular:
        raise _Reject("path", RejectCode.NOT_A_FILE, f"{raw_path!r} is not a regular file")
    ext = extension_of(resolved.name)
    if ext not in SUPPORTED_TYPES:
        raise _Reject(
            "path",
            RejectCode.UNSUPPORTED_TYPE,
            f"file type {ext or '(no extension)'!r} of {raw_path!r} is not supported; "
            f"supported: {', '.join(sorted(SUPPORTED_TYPES))}",
        )
    try:
        size = resolved.stat().st_size
    except OSError as exc:
        raise _Reject("path", RejectCode.UNREADABLE_FILE, f"{raw_path!r} cannot be read ({_os_reason(exc)})") from None
    if size == 0:
        raise _Reject("path", RejectCode.EMPTY_DOCUMENT, f"file {raw_path!r} is empty (0 bytes)")
    if size > MAX_FILE_BYTES:
        raise _Reject(
            "path",
            RejectCode.FILE_TOO_LARGE,
            f"file {raw_path!r} is {size} bytes, over the {MAX_FILE_BYTES} byte (50 MB) limit",
        )
    try:
        if size <= MULTIPART_MAX_BYTES:
            digest, words = _hash_and_extract(resolved)
        else:
            digest, words = _hash_streamed(resolved, count=ext in (".txt", ".md"))
    except OSError as exc:
        raise _Reject("path", RejectCode.UNREADABLE_FILE, f"{raw_path!r} cannot be read ({_os_reason(exc)})") from None
    except ExtractionError as exc:
        raise _Reject("path", RejectCode.UNREADABLE_FILE, f"{raw_path!r}: {exc}") from None
    if words == 0:
        raise _Reject("path", RejectCode.EMPTY_DOCUMENT, f"file {raw_path!r} has no extractable words")
    return resolved, size, digest, words


def _hash_and_extract(path: Path) -> tuple[str, int]:
    """Small file: one read serves both the hash and the word count (empty text → 0 words)."""
    data = path.read_bytes()
    text = extract_text(data, path.name)
    return hashlib.sha256(data).hexdigest(), (count_words(text) if text.strip() else 0)


def _hash_streamed(path: Path, *, count: bool) -> tuple[str, int | None]:
    """Large file: hash in chunks; for plain text also count words across chunk borders.

    Decoding follows ``doccheck.extract`` (UTF-8, BOM tolerated, or BOM-marked UTF-16; NUL
    bytes refused) so that a large file is judged by the same rules as a small one.
    """
    digest = hashlib.sha256()
    decoder: codecs.IncrementalDecoder | None = None
    words = 0
    carry = ""
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            if not count:
                continue
            if decoder is None:
                encoding = "utf-16" if chunk.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8-sig"
                decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
            try:
                text = carry + decoder.decode(chunk)
            except UnicodeDecodeError:
                raise ExtractionError("not UTF-8 text") from None
            if "\x00" in text:
                raise ExtractionError("text file contains NUL bytes (binary data?)")
            # A word never spans whitespace: count up to the last whitespace, carry the rest.
            cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"), text.rfind("\r"))
            if cut < 0:
                carry = text
                continue
            words += count_words(text[:cut])
            carry = text[cut:]
    if count and decoder is not None:
        try:
            carry += decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise ExtractionError("not UTF-8 text (truncated character at the end)") from None
        words += count_words(carry)
    return digest.hexdigest(), (words if count else None)


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__

