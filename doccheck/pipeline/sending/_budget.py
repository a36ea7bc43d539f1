"""A spending cap for one run: reserve before sending, settle with the service's answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from threading import Lock


@dataclass
class Budget:
    """``max_spend_cents`` for the documents sent by this run.

    Each document reserves its estimated cost before it is sent; when a reservation would
    go over the cap the document is left unsent (``skipped_budget``) and reported. After
    the answer the reservation is replaced by the real charge (0 for a replay), so a rerun
    that only replays spends nothing of the budget.
    """

    max_spend_cents: int
    spent_cents: int = 0
    reserved_cents: int = 0
    _lock: Lock = field(default_factory=Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_spend_cents < 0:
            raise ValueError("max_spend_cents must be >= 0")

    def reserve(self, cents: int) -> bool:
        """Hold ``cents``; False (and nothing held) when the cap would be exceeded."""
        with self._lock:
            if self.spent_cents + self.reserved_cents + cents > self.max_spend_cents:
                return False
            self.reserved_cents += cents
            return True

    def settle(self, reserved: int, actual: int) -> None:
        """Replace a reservation by the real charge."""
        with self._lock:
            self.reserved_cents -= reserved
            self.spent_cents += actual

    def release(self, reserved: int) -> None:
        """Give a reservation back (the request failed and charged nothing)."""
        self.settle(reserved, 0)

    @property
    def remaining_cents(self) -> int:
        """What is still available for new reservations."""
        return self.max_spend_cents - self.spent_cents - self.reserved_cents
