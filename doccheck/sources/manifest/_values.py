"""Turning typed cells (JSON, Parquet) into text, and spotting text no database or service takes.

Every cell becomes a string or None whatever type the file stored it as. Numbers keep the
form they were written in where the file has one (a JSON literal ``1.50`` stays ``"1.50"``, a
Parquet decimal keeps its scale); a number that is not finite, or a literal too long to be a
number anyone meant, is a :class:`CellProblem` for that cell only.

:func:`unsafe_text` finds what would pass a dry run and fail later: a NUL character
(PostgreSQL text refuses it) and a lone surrogate (UTF-8 cannot encode it, so the request
or the ledger write fails).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
import re
from typing import Any

from doccheck.errors import CellProblem
from doccheck.sources.manifest._limits import MAX_NUMBER_CHARS
from doccheck.sources.manifest._types import RejectCode

__all__ = ["JsonNumber", "NonFinite", "cell_text", "show", "unsafe_text"]

_UNSAFE = re.compile("[\x00\ud800-\udfff]")


class JsonNumber(str):
    """A JSON number literal kept as written (``parse_int``/``parse_float`` of ``json.loads``)."""


class NonFinite(str):
    """A ``NaN``/``Infinity``/``-Infinity`` token that Python's json accepts and JSON does not."""


def show(value: str, limit: int = 60) -> str:
    """``repr`` of untrusted text, escaped (NUL, surrogates) and cut, safe for messages and logs."""
    text = value if len(value) <= limit else value[:limit] + "…"
    return repr(text)


def unsafe_text(value: str) -> str | None:
    """Why ``value`` cannot be stored or sent (NUL, lone surrogate), or None when it can."""
    if value.isascii() and "\x00" not in value:  # O(1) flag + memchr: no regex scan of an ordinary text (issue 10)
        return None
    found = _UNSAFE.search(value)
    if found is None:
        return None
    char = found.group()
    what = "a NUL character" if char == "\x00" else f"a lone surrogate (U+{ord(char):04X}, not valid Unicode)"
    return f"contains {what} at character {found.start() + 1}"


def cell_text(field: str, value: Any) -> str | None:
    """The text of one cell (None = not given), or :class:`CellProblem` naming ``field``."""
    if value is None:
        return None
    if isinstance(value, NonFinite):
        raise CellProblem(field, RejectCode.INVALID_VALUE, f"{value} is not a finite number")
    if isinstance(value, JsonNumber):
        return _number_literal(field, value)
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float, decimal.Decimal)):
        return _number_text(field, value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CellProblem(
                field, RejectCode.INVALID_VALUE, f"binary value is not UTF-8 text (byte {exc.start + 1})"
            ) from None
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, str) and not isinstance(v, (JsonNumber, NonFinite)) for v in value):
            return ";".join(value)  # a product list stored as an array
        return _nested_json(field, value)
    if isinstance(value, dict):
        return _nested_json(field, value)
    return str(value)


def _number_text(field: str, value: bool | int | float | decimal.Decimal) -> str | None:
    """A typed number's text (a boolean as ``true``/``false``); NaN is missing, infinity refused."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):  # pandas' and Parquet's usual "missing"
            return None
        if math.isinf(value):
            raise CellProblem(field, RejectCode.INVALID_VALUE, f"{value} is not a finite number")
        return repr(value)
    if not value.is_finite():
        raise CellProblem(field, RejectCode.INVALID_VALUE, f"{value} is not a finite number")
    return str(value)  # keeps the scale: Decimal('1.50') → '1.50'


def _number_literal(field: str, literal: str) -> str:
    if len(literal) > MAX_NUMBER_CHARS:
        raise CellProblem(
            field, RejectCode.INVALID_VALUE, f"a number of {len(literal)} characters (over {MAX_NUMBER_CHARS})"
        )
    if not math.isfinite(float(literal)):
        raise CellProblem(field, RejectCode.INVALID_VALUE, f"{show(literal)} is not a finite number")
    return str.__str__(literal)


def _nested_json(field: str, value: Any) -> str:
    """Nested values as compact JSON text (depth already bounded by the reader)."""
    try:
        return json.dumps(_plain(field, value), ensure_ascii=False, sort_keys=True, allow_nan=False, default=str)
    except ValueError:
        raise CellProblem(field, RejectCode.INVALID_VALUE, "holds a number that is not finite") from None


def _plain(field: str, value: Any) -> Any:
    if isinstance(value, NonFinite):
        raise CellProblem(field, RejectCode.INVALID_VALUE, f"holds {value}, which is not a finite number")
    if isinstance(value, JsonNumber):
        literal = _number_literal(field, value)
        number = float(literal)
        return int(literal) if number.is_integer() and re.fullmatch(r"-?\d+", literal) else number
    if isinstance(value, dict):
        return {str(k): _plain(field, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(field, v) for v in value]
    return value
