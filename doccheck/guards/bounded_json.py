"""JSON parsing with a budget, for bytes that come from outside (request bodies, deliveries).

``json.loads`` accepts what strict JSON forbids and what later code cannot handle:
``NaN``/``Infinity`` (which ``JSONResponse`` then refuses to write back, so one stored value
makes every later listing fail), numbers of thousands of digits, nesting deep enough to hit
the recursion limit, and ``"\\ud800"`` escapes that decode to lone surrogates no UTF-8 writer
accepts. :func:`loads` refuses all of them with a :class:`JsonRejected` whose message names
the reason (never the content), so a server can answer 400/422 instead of 500.

A pure helper with no doccheck imports: the emulator and the receiver both use it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from doccheck.errors import JsonRejected

DEFAULT_MAX_BYTES = 1024 * 1024
DEFAULT_MAX_DEPTH = 32
DEFAULT_MAX_NUMBER_CHARS = 64


def _reject_constant(name: str) -> Any:
    raise JsonRejected(f"non-finite number {name} is not allowed")


def loads(
    data: bytes | bytearray | str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_number_chars: int = DEFAULT_MAX_NUMBER_CHARS,
) -> Any:
    """Strict, bounded ``json.loads``: the value, or :class:`JsonRejected`.

    Refused: more than ``max_bytes`` (checked before parsing), invalid UTF-8 or JSON,
    ``NaN``/``Infinity``/``-Infinity`` and floats that overflow to infinity (``1e999``),
    numbers longer than ``max_number_chars`` characters, containers nested deeper than
    ``max_depth``, and strings or keys holding lone surrogates.
    """
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise JsonRejected(f"JSON text is larger than {max_bytes} bytes")

    def parse_int(text: str) -> int:
        if len(text) > max_number_chars:
            raise JsonRejected(f"a number has more than {max_number_chars} characters")
        return int(text)

    def parse_float(text: str) -> float:
        if len(text) > max_number_chars:
            raise JsonRejected(f"a number has more than {max_number_chars} characters")
        value = float(text)
        if not math.isfinite(value):
            raise JsonRejected("a number is too large to be finite")
        return value

    try:
        value = json.loads(data, parse_int=parse_int, parse_float=parse_float, parse_constant=_reject_constant)
    except JsonRejected:
        raise
    except RecursionError:
        raise JsonRejected(f"JSON is nested deeper than {max_depth} levels") from None
    except UnicodeDecodeError:
        raise JsonRejected("JSON text is not valid UTF-8") from None
    except ValueError as exc:  # json.JSONDecodeError included
        raise JsonRejected(f"not valid JSON ({type(exc).__name__})") from None
    check_value(value, max_depth=max_depth)
    return value


def check_value(value: Any, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
    """Refuse a decoded value nested deeper than ``max_depth``, holding a non-finite float
    or a string with a lone surrogate (an iterative walk: no recursion, linear time)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= max_depth:
                raise JsonRejected(f"JSON is nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                for key, child in item.items():
                    _check_str(key)
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            _check_str(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise JsonRejected("non-finite number is not allowed")


def _check_str(text: object) -> None:
    if isinstance(text, str):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise JsonRejected("a string holds a lone surrogate escape (invalid Unicode)") from None


__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_DEPTH", "check_value", "loads"]
