"""The emulator's ``cost`` object, from the price rule of :mod:`doccheck.domain`.

``billed_words = max(words, 100)``; per started 100 billed words, ``ai`` costs 1 cent and
``similarity`` 2 cents (the interface does not show a price; docs/contracts.md fixes it).
"""

from __future__ import annotations

from collections.abc import Iterable

from doccheck.domain import CENTS_PER_100_WORDS as CENTS_PER_100_WORDS
from doccheck.domain import MIN_BILLED_WORDS as MIN_BILLED_WORDS
from doccheck.domain import billed_words, product_prices


def price(words: int, products: Iterable[str]) -> dict[str, int]:
    """The ``cost`` object of a check with ``words`` words and these products."""
    cents = product_prices(words, products)
    ai, sim = cents["ai"], cents["similarity"]
    return {"ai_cents": ai, "similarity_cents": sim, "total_cents": ai + sim, "billed_words": billed_words(words)}


def product_cents(cost: dict[str, int], product: str) -> int:
    """What one product contributed to ``cost`` (refunded when that product fails)."""
    return int(cost.get(f"{product}_cents", 0))
