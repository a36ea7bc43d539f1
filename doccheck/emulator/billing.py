"""The emulator's price rule (the interface does not show one; docs/architecture.md fixes it).

``billed_words = max(words, 100)``; per started 100 billed words, ``ai`` costs 1 cent and
``similarity`` 2 cents. Kept in one tiny pure function so tests and docs can quote it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

MIN_BILLED_WORDS = 100
CENTS_PER_100_WORDS = {"ai": 1, "similarity": 2}


def price(words: int, products: Iterable[str]) -> dict[str, int]:
    """The ``cost`` object of a check with ``words`` words and these products."""
    wanted = set(products)
    billed = max(int(words), MIN_BILLED_WORDS)
    units = math.ceil(billed / 100)
    ai = CENTS_PER_100_WORDS["ai"] * units if "ai" in wanted else 0
    sim = CENTS_PER_100_WORDS["similarity"] * units if "similarity" in wanted else 0
    return {"ai_cents": ai, "similarity_cents": sim, "total_cents": ai + sim, "billed_words": billed}


def product_cents(cost: dict[str, int], product: str) -> int:
    """What one product contributed to ``cost`` (refunded when that product fails)."""
    return int(cost.get(f"{product}_cents", 0))
