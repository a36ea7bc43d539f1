"""JSONL manifests: each line decoded and parsed on its own, within bounds.

A JSONL file is a list of independent records, often concatenated from several exports, so
every problem of a line stays with that line: bytes that are not UTF-8, a line longer than
:data:`~doccheck.sources.manifest._limits.MAX_LINE_BYTES` (skipped without being held), nesting deeper
than :data:`~doccheck.sources.manifest._limits.MAX_DEPTH` (found by a pre-scan before the recursive
parser could exhaust the stack), a number literal of thousands of digits (kept as text by
``parse_int``/``parse_float``, never converted), ``NaN``/``Infinity`` and a key given twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

from doccheck.errors import CellProblem, ManifestError
from doccheck.sources.manifest._column_names import canonical_column
from doccheck.sources.manifest._limits import MAX_DEPTH, MAX_LINE_BYTES
from doccheck.sources.manifest._types import RejectCode, Row, RowCursor, RowProblem, RowStart
from doccheck.sources.manifest._values import JsonNumber, NonFinite, cell_text
from doccheck.storage import Entry, UserPath, open_input

__all__ = ["iter_jsonl", "parse_line"]

_SKIP_CHUNK = 1024 * 1024
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_ID_IN_TEXT = re.compile(r'"document_id"\s*:\s*"([A-Za-z0-9._:/@ -]{1,256})"')


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def iter_jsonl(
    source: UserPath, *, cursor: RowCursor | None = None, start: RowStart | None = None, entry: Entry | None = None
) -> Iterator[tuple[int, Row | RowProblem]]:
    """(line number, row or problem) for every non-blank line; bounded memory per line.

    ``cursor`` is told the byte offset of each yielded line; ``start`` seeks to a line
    (a batch of a run recorded earlier) and numbers on from there. ``entry``: a store's file's
    listing entry (its size: the file is opened without asking it again).
    """
    try:
        handle = open_input(source, size=entry.size if entry is not None else None)
        if start is not None:
            handle.seek(start.offset)
    except OSError as exc:
        raise ManifestError(
            f"manifest {source} is not a readable JSONL file: {exc.strerror or type(exc).__name__}"
        ) from None
    cursor = cursor or RowCursor()
    with handle:
        line_number = 0 if start is None else start.row - 1
        while True:
            try:
                offset = handle.tell()
                line = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise ManifestError(
                    f"manifest {source} is not a readable JSONL file: {exc.strerror or type(exc).__name__}"
                ) from None
            if not line:
                return
            line_number += 1
            cursor.offset, cursor.line = offset, line_number
            if line_number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if len(line) > MAX_LINE_BYTES:
                _skip_rest_of_line(handle)
                yield (
                    line_number,
                    RowProblem("row", RejectCode.INVALID_ROW, f"the line is longer than {MAX_LINE_BYTES:,} bytes"),
                )
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield (
                    line_number,
                    RowProblem(
                        "row",
                        RejectCode.INVALID_ROW,
                        f"the line is not valid UTF-8 (byte 0x{line[exc.start]:02X} at byte {exc.start + 1} of the line); "
                        "save the manifest as UTF-8",
                        document_id=_best_effort_id(line),
                    ),
                )
                continue
            if not text.strip():
                continue
            yield line_number, parse_line(text)


def parse_line(text: str) -> Row | RowProblem:
    """One JSONL line as a row, or the problem that makes it unusable (naming the id when visible)."""
    result = _parse_line(text)
    if isinstance(result, RowProblem) and result.document_id is None and result.field == "row":
        found = _ID_IN_TEXT.search(text[:MAX_LINE_BYTES])
        if found:
            return RowProblem(result.field, result.code, result.why, document_id=found.group(1))
    return result


def _parse_line(text: str) -> Row | RowProblem:
    if _too_deep(text):
        return RowProblem(
            "row", RejectCode.INVALID_ROW, f"the line nests arrays/objects deeper than {MAX_DEPTH} levels"
        )
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        return RowProblem(
            "row", RejectCode.INVALID_ROW, f"line is not valid JSON ({exc.msg} at character {exc.pos + 1})"
        )
    except _DuplicateKey as exc:
        return RowProblem("row", RejectCode.INVALID_ROW, f"the key {exc.key!r} appears more than once in the object")
    except RecursionError:  # the pre-scan should make this unreachable; keep the row's problem its own anyway
        return RowProblem(
            "row", RejectCode.INVALID_ROW, f"the line nests arrays/objects deeper than {MAX_DEPTH} levels"
        )
    if not isinstance(value, dict):
        kind = "number" if isinstance(value, (JsonNumber, NonFinite)) else type(value).__name__
        return RowProblem("row", RejectCode.INVALID_ROW, f"line is a JSON {kind}, not an object")
    return _row(value)


def _row(value: dict[str, Any]) -> Row | RowProblem:
    row: Row = {}
    raw_id = next((v for k, v in value.items() if canonical_column(k) == "document_id"), None)
    for key, cell in value.items():
        column = canonical_column(key)
        if column in row:
            return RowProblem(
                "row", RejectCode.INVALID_ROW, f"the keys name the column {column!r} twice (letter case differs)"
            )
        try:
            row[column] = cell_text(column, cell)
        except CellProblem as exc:
            usable = isinstance(raw_id, str) and not isinstance(raw_id, NonFinite)
            return RowProblem(exc.field, exc.code, exc.why, document_id=str.__str__(raw_id) if usable else None)
    return row


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key[:60])
        result[key] = value
    # Reserved columns are matched regardless of case (canonical_column); keep the written keys here.
    return result


#: One decoder for every line (``json.loads`` with hooks would build one per call); numbers stay literals.
_DECODER = json.JSONDecoder(
    parse_int=JsonNumber, parse_float=JsonNumber, parse_constant=NonFinite, object_pairs_hook=_object
)


def _too_deep(text: str) -> bool:
    """True when brackets outside strings nest deeper than MAX_DEPTH.

    Cheap for ordinary lines (a count); otherwise strings are blanked, everything but the
    brackets dropped (``re``, in C) and the running depth taken with ``accumulate`` (also in
    C), so a line of millions of brackets costs a few linear passes, never Python recursion.
    Unbalanced brackets are left to the parser to name.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub('""', text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > MAX_DEPTH


def _skip_rest_of_line(handle: Any) -> None:
    while True:
        chunk = handle.readline(_SKIP_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return


def _best_effort_id(line: bytes) -> str | None:
    """The id of a line that is not UTF-8, to name it in the rejection when it is readable."""
    found = re.search(rb'"document_id"\s*:\s*"([A-Za-z0-9._:/@ -]{1,256})"', line[:MAX_LINE_BYTES])
    return found.group(1).decode("ascii") if found else None
