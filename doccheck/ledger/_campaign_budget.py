"""A campaign's spending cap, enforced through the ledger across processes and machines.

Why in the database: two ``doccheck run`` processes (a schedule and a rerun by hand, or
two machines sharing a PostgreSQL ledger) each holding a private counter would each spend
the whole cap. Here every process reserves against one row per campaign:

    UPDATE campaign_budgets SET reserved_cents = reserved_cents + :cents
     WHERE campaign = :campaign AND spent_cents + reserved_cents + :cents <= :cap

which is atomic on SQLite (one writer, ``BEGIN IMMEDIATE``) and on PostgreSQL (the row
lock re-evaluates the condition after a concurrent update). ``spent_cents`` grows when a
check's charge is first recorded (:func:`doccheck.ledger._money.record_charge`, once per
check id); the reservation is then released. A reservation is a row in ``budget_holds``
per (campaign, idempotency key): released on refusal, adopted (not doubled) by a resume of
the same key, reclaimed after :data:`HOLD_LEASE` when its process died and the key never
came back.

The cap is given per call (``--max-spend-cents``) and covers the campaign's whole spend:
what earlier runs of the campaign were charged counts against it. Refunds do not give
budget back (conservative: the charge happened).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import delete, func, select, update

from doccheck.ledger._money import ensure_budget_row, insert_ignore, release_holds_where
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import BudgetHoldRow, CampaignBudgetRow, utcnow

if TYPE_CHECKING:
    from doccheck.ledger._facade import Ledger

#: A reservation older than this whose key was not sent again is given back (its process
#: died). Far longer than any request (the client's own deadline is a minute).
HOLD_LEASE = timedelta(minutes=15)

_budgets = table_of(CampaignBudgetRow)
_holds = table_of(BudgetHoldRow)


@dataclass(frozen=True)
class BudgetState:
    """A campaign's committed money: charged so far plus reservations in flight."""

    campaign: str
    spent_cents: int
    reserved_cents: int
    holds: int

    @property
    def committed_cents(self) -> int:
        """What a new reservation is compared with the cap against."""
        return self.spent_cents + self.reserved_cents


def reserve_budget(ledger: Ledger, campaign: str, key: str, cents: int, cap_cents: int) -> bool:
    """Hold ``cents`` for sending ``key`` unless the campaign's committed money plus
    ``cents`` would exceed ``cap_cents``. A key that already holds a reservation (a resume,
    or another run sending the same key) adopts it and reserves nothing more."""
    cents = max(0, int(cents))
    with ledger.engine.begin() as conn:
        ensure_budget_row(conn, campaign)
        now = utcnow()
        took = insert_ignore(
            conn, _holds, {"campaign": campaign, "idempotency_key": key, "cents": cents, "held_at": now},
            ["campaign", "idempotency_key"],
        )  # fmt: skip
        if not took:
            conn.execute(
                update(_holds).where(_holds.c.campaign == campaign, _holds.c.idempotency_key == key).values(held_at=now)
            )
            return True
        granted = conn.execute(
            update(_budgets)
            .where(
                _budgets.c.campaign == campaign,
                _budgets.c.spent_cents + _budgets.c.reserved_cents + cents <= cap_cents,
            )
            .values(reserved_cents=_budgets.c.reserved_cents + cents, cap_cents=cap_cents, updated_at=now)
        ).rowcount
        if not granted:
            conn.execute(delete(_holds).where(_holds.c.campaign == campaign, _holds.c.idempotency_key == key))
        return bool(granted)


#: A hold kept for a check whose price is not known yet (the service prices at completion)
#: is dated this far ahead, so :func:`reclaim_budget_holds` leaves it: the campaign counts the
#: estimate until the price is recorded (``money.record_charge`` then releases it).
PRICE_PENDING = timedelta(days=30)


def keep_budget_until_priced(ledger: Ledger, campaign: str, key: str) -> None:
    """Keep ``key``'s reservation (its estimate) in the campaign while its check's price is
    unknown: a check answered with cost 0 was made and will be charged."""
    with ledger.engine.begin() as conn:
        conn.execute(
            update(_holds)
            .where(_holds.c.campaign == campaign, _holds.c.idempotency_key == key)
            .values(held_at=utcnow() + PRICE_PENDING)
        )


def release_budget(ledger: Ledger, campaign: str, key: str) -> int:
    """Give back the reservation of ``key`` (after its charge was recorded, or after a
    refusal that charged nothing); returns the cents released (0 when none was held)."""
    with ledger.engine.begin() as conn:
        return release_holds_where(conn, campaign, _holds.c.idempotency_key == key)


def reclaim_budget_holds(ledger: Ledger, campaign: str, lease: timedelta = HOLD_LEASE) -> int:
    """Give back reservations older than ``lease`` (their process died); returns cents."""
    with ledger.engine.begin() as conn:
        return release_holds_where(conn, campaign, _holds.c.held_at < utcnow() - lease)


def budget_state(ledger: Ledger, campaign: str) -> BudgetState:
    """The campaign's spent and reserved cents (zeros for a campaign never budgeted)."""
    with ledger.engine.connect() as conn:
        row = conn.execute(
            select(_budgets.c.spent_cents, _budgets.c.reserved_cents).where(_budgets.c.campaign == campaign)
        ).first()
        holds = conn.execute(select(func.count()).select_from(_holds).where(_holds.c.campaign == campaign)).scalar_one()
    spent, reserved = (int(row[0]), int(row[1])) if row is not None else (0, 0)
    return BudgetState(campaign=campaign, spent_cents=spent, reserved_cents=reserved, holds=int(holds))
