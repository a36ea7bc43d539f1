"""Ledger tables of money: what each check cost, and each campaign's budget.

Why tables of their own (not columns of ``submissions``): the service bills a CHECK, and
several manifest rows (identical content), several runs and several machines can share
one check. Keyed by ``check_id``, a charge is stored once however many rows point at it,
so summing this table is what the service charged. The budget is a row per campaign that
every process updates with a conditional UPDATE, so a cap holds across processes.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from doccheck.ledger._sqltypes import table_of
from doccheck.ledger.tables import utcnow


class CheckCostRow(SQLModel, table=True):
    """The money of one check, as the service counts it.

    ``charged_cents`` is the create answer's ``cost.total_cents`` (stored the first time the
    check id is seen; a replay returns the same check and adds nothing). ``refunded_cents``
    follows the failed products (events and polls). ``budget_counted`` says the charge was
    added to its campaign's budget row (once, atomically).
    """

    __tablename__ = "check_costs"
    __table_args__ = (Index("ix_check_costs_campaign", "campaign"),)

    check_id: str = Field(primary_key=True)
    campaign: str | None = None
    charged_cents: int = 0
    ai_cents: int = 0
    similarity_cents: int = 0
    refunded_cents: int = 0
    stated_refund_cents: int | None = None
    budget_counted: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class CampaignBudgetRow(SQLModel, table=True):
    """Money committed by a campaign: ``spent_cents`` (charges of its checks, counted once)
    plus ``reserved_cents`` (estimates of requests in flight). A reservation succeeds only
    through ``UPDATE … WHERE spent + reserved + :cents <= :cap``, atomic on both engines."""

    __tablename__ = "campaign_budgets"

    campaign: str = Field(primary_key=True)
    spent_cents: int = 0
    reserved_cents: int = 0
    cap_cents: int | None = None
    updated_at: datetime = Field(default_factory=utcnow)


class BudgetHoldRow(SQLModel, table=True):
    """One reservation in flight, per (campaign, idempotency key): released when the answer
    is recorded or the request is refused; adopted by a resume of the same key; reclaimed
    after a lease when its process died and the key never came back."""

    __tablename__ = "budget_holds"

    campaign: str = Field(primary_key=True)
    idempotency_key: str = Field(primary_key=True)
    cents: int = 0
    held_at: datetime = Field(default_factory=utcnow)


MONEY_TABLES = [table_of(CheckCostRow), table_of(CampaignBudgetRow), table_of(BudgetHoldRow)]
