"""The product list of a row or a run: ``"ai;similarity"``, ``"ai|similarity"``, a list, or empty."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from doccheck import domain

__all__ = ["KNOWN_PRODUCTS", "parse_products"]

KNOWN_PRODUCTS: frozenset[str] = frozenset(domain.PRODUCTS)

_PRODUCT_SEPARATORS = re.compile(r"[;|,]")


def parse_products(value: str | Iterable[str] | None, default: Sequence[str] = ("ai",)) -> tuple[str, ...]:
    """Parse a product list (``"ai;similarity"``, ``"ai|similarity"``, ``"ai,similarity"`` or a list).

    Empty → ``default``. Returns a sorted tuple without duplicates. Raises ``ValueError``
    naming the unknown values, so callers can turn it into a row rejection or a config error.
    A cell's text (or none) with a tuple of defaults is parsed once a run (the same few values
    on every row of a manifest).
    """
    if (value is None or isinstance(value, str)) and isinstance(default, tuple):
        return _parsed(value, default)
    return _parse(value, default)


@lru_cache(maxsize=256)
def _parsed(value: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    return _parse(value, default)


def _parse(value: str | Iterable[str] | None, default: Sequence[str]) -> tuple[str, ...]:
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
        shown = ", ".join(repr(u[:40]) for u in unknown[:5]) + (", …" if len(unknown) > 5 else "")
        raise ValueError(f"unknown product(s) {shown}; allowed: {', '.join(sorted(KNOWN_PRODUCTS))}")
    return tuple(sorted(set(cleaned)))
