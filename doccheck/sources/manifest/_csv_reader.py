"""CSV manifests through the standard ``csv`` module, row by row.

Why not pandas: the ``csv`` module lets one ragged row become one rejection instead of
sinking the manifest, reports duplicate header names instead of renaming them, and lets us
see the physical lines each row was read from, which is how a runaway quote is caught:

* An unterminated quote makes the parser read the following lines into one cell. A row
  that spans several lines is re-read strictly; when the quoting is broken (the quote is
  still open at the end of the file, or a closing quote is followed by more text), or when
  lines inside the cell look like rows of the manifest themselves (as many fields as the
  header, an id-like first value, and a ``path`` with an extension or valid ``products``),
  the row is rejected as ``unterminated_quote`` and each swallowed row gets a rejection of
  its own, with its id and line.
* The encoding is a property of the whole file (one spreadsheet export), so a file that is
  not UTF-8 is refused before any row, naming the line, the byte and how to re-save it.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator
from typing import IO

from doccheck.errors import ManifestError
from doccheck.sources.manifest._column_names import canonical_columns
from doccheck.sources.manifest._limits import MAX_ID_CHARS, MAX_ROW_CHARS
from doccheck.sources.manifest._types import RejectCode, Row, RowCursor, RowProblem, RowStart
from doccheck.storage import Entry, UserPath, open_input

__all__ = ["read_csv"]

_CHUNK = 1024 * 1024
_CSV_FIELD_LIMIT = 2**31 - 1  # rows are bounded by MAX_ROW_CHARS in _Lines instead
_PRODUCT_WORDS = {"ai", "similarity"}


class _RowTooLarge(Exception):
    pass


class _Lines:
    """The file's physical lines for ``csv.reader``, remembering those of the current row.

    ``offset`` counts the bytes read so far: with ``newline=""`` nothing is translated and
    the file is valid UTF-8, so a line's UTF-8 length is exactly the bytes it came from.
    """

    def __init__(self, handle: IO[str], *, line: int = 0, offset: int = 0) -> None:
        self._handle = handle
        self.line = line  # physical lines read so far
        self.offset = offset  # bytes read so far
        self.current: list[str] = []
        self._chars = 0

    def start_row(self) -> None:
        self.current = []
        self._chars = 0

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = self._handle.readline(MAX_ROW_CHARS + 1)
        if not line:
            raise StopIteration
        self.line += 1
        self.offset += len(line) if line.isascii() else len(line.encode("utf-8"))
        self._chars += len(line)
        self.current.append(line)
        if self._chars > MAX_ROW_CHARS:
            raise _RowTooLarge
        return line


def read_csv(
    source: UserPath, *, cursor: RowCursor | None = None, start: RowStart | None = None, entry: Entry | None = None
) -> tuple[list[str], Iterator[tuple[int, Row | RowProblem]]]:
    """Columns and a row iterator; whole-file problems raise :class:`ManifestError` up front.

    ``cursor`` is told where each yielded row begins. ``start`` reads the header, then seeks
    to that row (a batch of a run recorded earlier); the whole-file UTF-8 check is skipped
    then (the rows read are still decoded strictly: a byte that is not UTF-8 raises). ``entry``:
    a store's file's listing entry (its size: the file is opened without asking it again).
    """
    size = entry.size if entry is not None else None
    if start is None:
        _check_utf8(source, size)
    _allow_large_csv_fields()
    raw = _open(source, size)
    bom = _starts_with_bom(source, raw)
    handle = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    lines = _Lines(handle, offset=3 if bom else 0)
    reader = csv.reader(lines)
    try:
        header = _next_record(source, reader, lines)
        while header is not None and not any(cell.strip() for cell in header):
            header = _next_record(source, reader, lines)  # leading blank lines
        if header is None:
            raise ManifestError(f"manifest {source} is empty (no header row)")
        columns = canonical_columns(source, header)
    except BaseException:
        handle.close()
        raise
    index = 0
    if start is not None:
        raw = handle.detach()  # the same open file, read on from the batch's first row
        try:
            raw.seek(start.offset)
        except OSError as exc:
            raw.close()
            raise ManifestError(
                f"manifest {source} is not a readable CSV file: {exc.strerror or type(exc).__name__}"
            ) from None
        handle = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        lines = _Lines(handle, line=start.line - 1, offset=start.offset)
        reader = csv.reader(lines)
        index = start.row - 1
    return columns, _rows(source, handle, reader, lines, columns, index, cursor or RowCursor())


def _open(source: UserPath, size: int | None) -> IO[bytes]:
    try:
        return open_input(source, size=size)
    except OSError as exc:
        raise ManifestError(
            f"manifest {source} is not a readable CSV file: {exc.strerror or type(exc).__name__}"
        ) from None


def _starts_with_bom(source: UserPath, raw: IO[bytes]) -> bool:
    """Whether the file starts with UTF-8's BOM; the file is left at its start."""
    try:
        found = raw.read(3) == codecs.BOM_UTF8
        raw.seek(0)
    except OSError as exc:
        raw.close()
        raise ManifestError(
            f"manifest {source} is not a readable CSV file: {exc.strerror or type(exc).__name__}"
        ) from None
    return found


def _rows(
    source: UserPath,
    handle: IO[str],
    reader: Iterator[list[str]],
    lines: _Lines,
    columns: list[str],
    index: int,
    cursor: RowCursor,
) -> Iterator[tuple[int, Row | RowProblem]]:
    id_index = columns.index("document_id") if "document_id" in columns else None
    with handle:
        while True:
            first_line = lines.line + 1
            first_offset = lines.offset
            cells = _next_record(source, reader, lines)
            if cells is None:
                return
            if not cells or not any(cell.strip() for cell in cells):
                continue  # blank line
            index += 1
            cursor.offset, cursor.line = first_offset, first_line
            row_id = _id_of(cells, id_index)
            if len(lines.current) > 1:
                swallowed = _quote_problem(lines.current, columns, id_index)
                if swallowed is not None:
                    problem, ids = swallowed
                    field = _multiline_field(cells, columns)
                    last = first_line + len(lines.current) - 1
                    yield (
                        index,
                        RowProblem(
                            field,
                            RejectCode.UNTERMINATED_QUOTE,
                            f"a quote opened on line {first_line} is not closed properly ({problem}), so lines "
                            f"{first_line + 1}–{last} were read into this cell"
                            + (f", among them {len(ids)} that look like rows of their own" if ids else "")
                            + '; close the quote, and double a quote inside a quoted cell ("")',
                            document_id=row_id,
                        ),
                    )
                    opener = index
                    cursor.offset = cursor.line = None  # the swallowed rows have no start of their own
                    for line_number, swallowed_id in ids:
                        index += 1
                        yield (
                            index,
                            RowProblem(
                                "row",
                                RejectCode.UNTERMINATED_QUOTE,
                                f"line {first_line + line_number} was read into row {opener}'s "
                                f"{field!r} cell by the quote opened on line {first_line}; fix that quote",
                                document_id=swallowed_id,
                            ),
                        )
                    continue
            if len(cells) > len(columns):
                yield (
                    index,
                    RowProblem(
                        "row",
                        RejectCode.INVALID_ROW,
                        f"the row has {len(cells)} fields but the header has {len(columns)} (unquoted comma?)",
                        document_id=row_id,
                    ),
                )
                continue
            # A CSV cannot tell an empty cell from a missing one: both mean "not given".
            yield index, {c: (cells[i] if i < len(cells) and cells[i] != "" else None) for i, c in enumerate(columns)}


def _next_record(source: UserPath, reader: Iterator[list[str]], lines: _Lines) -> list[str] | None:
    lines.start_row()
    try:
        return next(reader)
    except StopIteration:
        return None
    except _RowTooLarge:
        raise ManifestError(
            f"manifest {source}: the row starting on line {lines.line - len(lines.current) + 1} is longer than "
            f"{MAX_ROW_CHARS:,} characters (a quote that is never closed?)"
        ) from None
    except csv.Error as exc:
        raise ManifestError(f"manifest {source} is not a readable CSV file: line {lines.line}: {exc}") from None
    except UnicodeDecodeError:  # only when read from a ``start``: a full read checked the whole file first
        raise ManifestError(f"manifest {source} is not UTF-8 near line {lines.line + 1}") from None
    except OSError as exc:
        raise ManifestError(
            f"manifest {source} is not a readable CSV file: {exc.strerror or type(exc).__name__}"
        ) from None


def _id_of(cells: list[str], id_index: int | None) -> str | None:
    if id_index is None or id_index >= len(cells):
        return None
    value = cells[id_index].strip()
    return value or None


def _quote_problem(
    raw_lines: list[str], columns: list[str], id_index: int | None
) -> tuple[str, list[tuple[int, str | None]]] | None:
    """Why a multi-line row's quoting is broken, and the (line offset, id) of lines that look like rows.

    None when the row is an ordinary multi-line cell (an essay with line breaks).
    """
    strict_error: str | None = None
    try:
        for _ in csv.reader(raw_lines, strict=True):
            pass
    except csv.Error as exc:
        strict_error = "the file ends inside the quote" if "unexpected end" in str(exc) else str(exc)
    looks_like_rows: list[tuple[int, str | None]] = []
    strong = False
    for offset, line in enumerate(raw_lines[1:], start=1):
        fields = next(csv.reader([line]), [])
        if len(fields) != len(columns) or len(columns) < 2:
            continue
        row_id = _id_of(fields, id_index)
        if row_id is None or len(row_id) > MAX_ID_CHARS or any(c.isspace() for c in row_id):
            continue
        looks_like_rows.append((offset, row_id))
        strong = strong or _has_row_evidence(fields, columns)
    if strict_error is not None:
        return strict_error, looks_like_rows
    if strong:
        return "lines inside the cell look like rows", looks_like_rows
    return None


def _has_row_evidence(fields: list[str], columns: list[str]) -> bool:
    """A swallowed line names a file with an extension or valid products: it is a row, not prose."""
    values = dict(zip(columns, fields, strict=False))
    path = (values.get("path") or "").strip()
    if path and " " not in path and "." in path.rsplit("/", 1)[-1][1:]:
        return True
    products = [
        p.strip().lower() for p in (values.get("products") or "").replace("|", ";").replace(",", ";").split(";")
    ]
    return any(products) and all(p in _PRODUCT_WORDS for p in products if p)


def _multiline_field(cells: list[str], columns: list[str]) -> str:
    for i, cell in enumerate(cells):
        if "\n" in cell or "\r" in cell:
            return columns[i] if i < len(columns) and columns[i] else "row"
    return "row"


def _check_utf8(source: UserPath, size: int | None) -> None:
    """Refuse a CSV that is not UTF-8 before reading any row, naming the line and the fix."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    offset = 0
    newlines = 0
    try:
        with open_input(source, size=size) as handle:
            while chunk := handle.read(_CHUNK):
                if offset == 0 and chunk.startswith((b"\xff\xfe", b"\xfe\xff")):
                    raise ManifestError(
                        f"manifest {source} is UTF-16 text (Excel's 'Unicode Text'); "
                        "save it as 'CSV UTF-8 (Comma delimited)'"
                    )
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as exc:
                    # exc.start is relative to the decoder's pending bytes plus this chunk.
                    pending = len(exc.object) - len(chunk)
                    where = exc.start - pending
                    line = newlines + chunk.count(b"\n", 0, max(where, 0)) + 1
                    bad = exc.object[exc.start]
                    raise ManifestError(
                        f"manifest {source} is not UTF-8: byte 0x{bad:02X} on line {line} cannot be decoded. "
                        "It is probably Windows-1252/Latin-1 (Excel's 'CSV (Comma delimited)'): save it as "
                        "'CSV UTF-8 (Comma delimited)', or convert it, e.g. "
                        "`iconv -f cp1252 -t utf-8 old.csv > new.csv`"
                    ) from None
                newlines += chunk.count(b"\n")
                offset += len(chunk)
            try:
                decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                raise ManifestError(
                    f"manifest {source} is not UTF-8: it ends inside a multi-byte character (a truncated file?)"
                ) from None
    except OSError as exc:
        raise ManifestError(
            f"manifest {source} is not a readable CSV file: {exc.strerror or type(exc).__name__}"
        ) from None


def _allow_large_csv_fields() -> None:
    """A whole essay in a ``text`` cell is longer than the csv module's 128 KiB default."""
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)
