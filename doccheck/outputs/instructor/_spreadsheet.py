"""``documents.csv`` that opens cleanly in Excel and LMS gradebook imports.

Decisions (documented in docs/instructor.md):

- **UTF-8 with a BOM.** Without it, Excel on Windows reads a CSV as the local ANSI code
  page and mangles every accented student name; Moodle, Canvas and Blackboard gradebook
  imports, pandas (``encoding="utf-8-sig"``) and LibreOffice accept or skip the BOM.
- **RFC 4180**: comma separator, ``\\r\\n`` line ends, fields quoted only when needed,
  a header row with the stable column names of ``documents.parquet``.
- **CSV injection** (OWASP "CSV Injection"): a text cell beginning with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return would be run as a formula by a spreadsheet, so
  it is prefixed with a single quote ``'``, which makes the spreadsheet show it as text.
  Numbers are written as numbers (a negative number is data, not a formula) and booleans
  as ``true`` / ``false``. A manifest's document id or metadata is untrusted input.
"""

from __future__ import annotations

import csv
import io
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["FORMULA_PREFIXES", "CsvChunks", "csv_text", "neutralise", "write_csv"]

#: First characters a spreadsheet reads as the start of a formula (OWASP).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
BOM = "\ufeff"


def neutralise(value: str) -> str:
    """``'`` before a text that a spreadsheet would evaluate; other texts unchanged."""
    return "'" + value if value.startswith(FORMULA_PREFIXES) else value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return neutralise(str(value))


#: :data:`FORMULA_PREFIXES` as a regular expression (RE2) over a text column.
_FORMULA_PATTERN = "^[=+@\\t\\r-]"


def _text(value: str) -> pa.StringScalar:
    """A typed text scalar: for a bare ``"true"`` pyarrow infers a type, which loads pandas into a
    command that keeps it out (doccheck.commands._pyarrow_without_pandas); made when used, after
    the command has done so (pyarrow's first look at pandas must be its)."""
    return pa.scalar(value, pa.string())


def _column_cells(column: pa.ChunkedArray) -> list[str]:
    """The cells of one column as :func:`_cell` writes them (texts neutralised, nulls empty)."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        quoted = pc.binary_join_element_wise(_text("'"), column, _text(""))
        cells = pc.if_else(pc.match_substring_regex(column, _FORMULA_PATTERN), quoted, column)
    elif pa.types.is_integer(kind):
        cells = pc.cast(column, pa.string())
    elif pa.types.is_boolean(kind):
        cells = pc.if_else(column, _text("true"), _text("false"))
    else:  # floats (repr, as Python writes them) and anything else
        return [_cell(value) for value in column.to_pylist()]
    texts: list[str] = cells.fill_null("").to_pylist()
    return texts


def csv_text(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """The CSV as text (without the BOM)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([neutralise(c) for c in columns])
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    return buffer.getvalue()


def write_csv(path: str | Path, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``path`` (UTF-8 with BOM) through a temporary file and a rename."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_bytes((BOM + csv_text(columns, rows)).encode("utf-8"))
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


class CsvChunks:
    """The same file as :func:`write_csv`, written chunk by chunk (a large run's rows are
    never all in memory): a temporary file gets the BOM and the header, then each chunk's
    rows; leaving the ``with`` block without an error renames it over ``path``, an error
    removes it."""

    def __init__(self, path: str | Path, columns: Sequence[str]) -> None:  # noqa: D107
        self.path = Path(path)
        self._columns = list(columns)
        self._tmp = self.path.with_name(f".{self.path.name}.tmp-{uuid.uuid4().hex}")

    def __enter__(self) -> CsvChunks:
        # newline="": the csv module writes its own "\r\n", untranslated.
        self._handle = open(self._tmp, "w", encoding="utf-8", newline="")  # noqa: SIM115
        self._handle.write(BOM)
        self._writer = csv.writer(self._handle, lineterminator="\r\n")
        self._writer.writerow([neutralise(c) for c in self._columns])
        return self

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append these rows (cells as :func:`csv_text` writes them)."""
        columns = self._columns
        self._writer.writerows([_cell(row.get(c)) for c in columns] for row in rows)

    def write_table(self, table: pa.Table) -> None:
        """Append the rows of ``table`` (its columns in this file's order), each column's cells
        made at once by Arrow: the same text as :meth:`write`, without a dict a row and a call a cell
        (a 100,000-row wide table: ~0.9 s less)."""
        columns = [_column_cells(table.column(c)) if c in table.column_names else [""] * table.num_rows
                   for c in self._columns]  # fmt: skip
        self._writer.writerows(zip(*columns, strict=True))

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._handle.close()
            if exc_type is None:
                self._tmp.replace(self.path)
        finally:
            self._tmp.unlink(missing_ok=True)
