"""``--max-spend-cents`` as the campaign's cap, shared by every process on one ledger.

:class:`~doccheck.pipeline.sending._budget.Budget` is the value the caller passes (a cap, and the
run's own counters); :func:`bind_budget` ties it to the campaign's row in the ledger
(:mod:`doccheck.ledger._campaign_budget`) for one batch. A document is sent only when both
the run's counters and the campaign's row accept its estimate; the campaign's row counts
each check's real charge once, when the answer is recorded, and the document's
reservation is released then (or at once on a refusal).
"""

from __future__ import annotations

from doccheck.ledger import Ledger, keep_budget_until_priced, reclaim_budget_holds, release_budget, reserve_budget
from doccheck.pipeline.sending._budget import Budget


class CampaignBudget:
    """The run's :class:`Budget` plus the campaign's reservations in the ledger."""

    def __init__(self, local: Budget, ledger: Ledger, campaign: str) -> None:
        self.local = local
        self.ledger = ledger
        self.campaign = campaign
        reclaim_budget_holds(ledger, campaign)

    @property
    def max_spend_cents(self) -> int:
        """The cap (the same number for the run and for the campaign)."""
        return self.local.max_spend_cents

    def reserve(self, cents: int, key: str) -> bool:
        """Hold ``cents`` for ``key`` in the run and in the campaign; False (nothing held)
        when either would go over the cap."""
        if not self.local.reserve(cents):
            return False
        if reserve_budget(self.ledger, self.campaign, key, cents, self.local.max_spend_cents):
            return True
        self.local.release(cents)
        return False

    def settle(self, reserved: int, actual: int, key: str) -> None:
        """The answer is recorded (its charge already counted in the campaign's row by the
        ledger, once per check): drop the reservation."""
        self.local.settle(reserved, actual)
        release_budget(self.ledger, self.campaign, key)

    def keep_estimate(self, reserved: int, key: str) -> None:
        """The check was made but its price is not known yet (cost 0 on the create answer):
        the run and the campaign count the estimate until the price is recorded."""
        self.local.settle(reserved, reserved)
        keep_budget_until_priced(self.ledger, self.campaign, key)

    def release(self, reserved: int, key: str) -> None:
        """The request was refused and charged nothing: give the reservation back."""
        self.local.release(reserved)
        release_budget(self.ledger, self.campaign, key)


def bind_budget(budget: Budget | None, ledger: Ledger, campaign: str) -> CampaignBudget | None:
    """The budget of one batch, bound to its campaign in the ledger (None: no cap)."""
    return CampaignBudget(budget, ledger, campaign) if budget is not None else None
