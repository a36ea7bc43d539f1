"""Charges and refunds per check, stored once per check id (invariant 7).

The service bills checks, not manifest rows: rows with identical content share one check,
a rerun reuses it, a replay after a crash returns it again. So the money lives in
``check_costs`` keyed by check id, written by three kinds of answers:

- the create answer (``Ledger.mark_submitted``): ``cost.total_cents`` is the charge,
  stored the first time the id is seen (a replay or a second row adds nothing); a later
  answer stating a higher charge raises it (a service that prices at completion);
- a poll (``GET /checks/{id}``): the same cost, plus which products failed;
- an event: ``check.failed`` for a product means its ``<product>_cents`` are refunded.

``refunded_cents`` is recomputed from the failed outcomes every time one of these
arrives (idempotent: a duplicate event or a second poll changes nothing). The price rule
and the refund rule are in :mod:`doccheck.client.assumptions`.

Every function takes a SQLAlchemy ``Connection`` inside the caller's transaction, so the
charge, its campaign's budget counter and the outcome that caused a refund are written
together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from doccheck.client import INVALID_RESPONSE, assumptions
from doccheck.domain import ProductState
from doccheck.ledger._in_list import one_of
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import BudgetHoldRow, CampaignBudgetRow, CheckCostRow, OutcomeRow, SubmissionRow, utcnow

_costs = table_of(CheckCostRow)
_budgets = table_of(CampaignBudgetRow)
_outcomes = table_of(OutcomeRow)
_holds = table_of(BudgetHoldRow)
_subs = table_of(SubmissionRow)


@dataclass(frozen=True)
class Money:
    """Charged, refunded and net cents of a set of checks (each check counted once)."""

    checks: int = 0
    charged_cents: int = 0
    refunded_cents: int = 0

    @property
    def net_cents(self) -> int:
        """What the service kept: charged minus refunded."""
        return self.charged_cents - self.refunded_cents


def insert_ignore(conn: Connection, table: Table, values: Mapping[str, Any], keys: list[str]) -> int:
    """``INSERT … ON CONFLICT DO NOTHING`` on SQLite and PostgreSQL; returns rows inserted."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(table).values(**values).on_conflict_do_nothing(index_elements=keys)
    # RETURNING, not rowcount: psycopg reports -1 for an INSERT … ON CONFLICT here.
    return 1 if conn.execute(stmt.returning(*(table.c[k] for k in keys))).first() is not None else 0


def insert_many_ignore(conn: Connection, table: Table, rows: list[dict[str, Any]], key: str) -> set[str]:
    """One multi-row ``INSERT … ON CONFLICT (key) DO NOTHING``; returns the keys inserted.

    Chunked so a statement stays under SQLite's parameter limit (32,766)."""
    if not rows:
        return set()
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    per = max(1, 30_000 // max(1, len(rows[0])))
    inserted: set[str] = set()
    for start in range(0, len(rows), per):
        stmt = dialect.insert(table).values(rows[start : start + per])
        stmt = stmt.on_conflict_do_nothing(index_elements=[key]).returning(table.c[key])
        inserted.update(conn.execute(stmt).scalars().all())
    return inserted


def record_charge(conn: Connection, check_id: str, campaign: str | None, cost: object) -> None:
    """Store what ``check_id`` was charged (first answer wins) and count it, once, in its
    campaign's budget; then bring the refund up to date (an event may have come first)."""
    if cost is None:
        return
    now = utcnow()
    insert_ignore(
        conn,
        _costs,
        {
            "check_id": check_id,
            "campaign": campaign or None,
            "charged_cents": assumptions.charged_cents(cost),
            "ai_cents": assumptions.product_cents(cost, "ai"),
            "similarity_cents": assumptions.product_cents(cost, "similarity"),
            "refunded_cents": 0,
            "budget_counted": False,
            "created_at": now,
            "updated_at": now,
        },
        ["check_id"],
    )
    _raise_charge(conn, check_id, cost)
    if campaign:
        conn.execute(
            update(_costs).where(_costs.c.check_id == check_id, _costs.c.campaign.is_(None)).values(campaign=campaign)
        )
        _count_in_budget(conn, check_id, campaign)
    if isinstance(cost, Mapping):
        stated = cost.get(assumptions.REFUND_FIELD)
    else:
        stated = getattr(cost, assumptions.REFUND_FIELD, None)
    refresh_refund(conn, check_id, stated=stated)


def _raise_charge(conn: Connection, check_id: str, cost: object) -> None:
    """A later answer stating a higher charge than recorded (a service that prices a check
    at completion answers 0 on create): the higher one is what was charged. Never lowered:
    a service that takes refunds off ``total_cents`` keeps its refund in the refund. A
    check already counted in its campaign's budget has the difference added there too."""
    new = assumptions.charged_cents(cost)
    row = conn.execute(
        select(_costs.c.charged_cents, _costs.c.budget_counted, _costs.c.campaign).where(_costs.c.check_id == check_id)
    ).first()
    if row is None or new <= int(row[0] or 0):
        return
    conn.execute(
        update(_costs)
        .where(_costs.c.check_id == check_id)
        .values(
            charged_cents=new,
            ai_cents=assumptions.product_cents(cost, "ai"),
            similarity_cents=assumptions.product_cents(cost, "similarity"),
            updated_at=utcnow(),
        )
    )
    if row[1] and row[2]:
        conn.execute(
            update(_budgets)
            .where(_budgets.c.campaign == row[2])
            .values(spent_cents=_budgets.c.spent_cents + (new - int(row[0] or 0)), updated_at=utcnow())
        )
        _release_priced_holds(conn, check_id, row[2])


def _release_priced_holds(conn: Connection, check_id: str, campaign: str) -> None:
    """The estimate held while the check's price was unknown gives way to the price."""
    keys = select(_subs.c.idempotency_key).where(_subs.c.check_id == check_id).scalar_subquery()
    release_holds_where(conn, campaign, _holds.c.idempotency_key.in_(keys))


def release_holds_where(conn: Connection, campaign: str, condition: ColumnElement[bool]) -> int:
    """Delete the campaign's holds matching ``condition`` and take their cents off its
    ``reserved_cents``, in the caller's transaction; returns the cents released."""
    gone = conn.execute(delete(_holds).where(_holds.c.campaign == campaign, condition).returning(_holds.c.cents))
    cents = sum(int(c or 0) for c in gone.scalars().all())
    if cents:
        conn.execute(
            update(_budgets)
            .where(_budgets.c.campaign == campaign)
            .values(reserved_cents=_budgets.c.reserved_cents - cents, updated_at=utcnow())
        )
    return cents


def _count_in_budget(conn: Connection, check_id: str, campaign: str) -> None:
    """Add the check's charge to the campaign's ``spent_cents`` exactly once (a
    conditional UPDATE flips ``budget_counted``; only the process that flips it adds)."""
    flipped = conn.execute(
        update(_costs)
        .where(_costs.c.check_id == check_id, _costs.c.budget_counted.is_(False))
        .values(budget_counted=True)
    ).rowcount
    if not flipped:
        return
    charged = conn.execute(select(_costs.c.charged_cents).where(_costs.c.check_id == check_id)).scalar_one()
    ensure_budget_row(conn, campaign)
    conn.execute(
        update(_budgets)
        .where(_budgets.c.campaign == campaign)
        .values(spent_cents=_budgets.c.spent_cents + charged, updated_at=utcnow())
    )


def ensure_budget_row(conn: Connection, campaign: str) -> None:
    """The campaign's budget row, created empty when missing (concurrent creators tolerated)."""
    insert_ignore(
        conn,
        _budgets,
        {"campaign": campaign, "spent_cents": 0, "reserved_cents": 0, "updated_at": utcnow()},
        ["campaign"],
    )


def refresh_refund(conn: Connection, check_id: str, *, stated: object = None) -> None:
    """Recompute ``refunded_cents`` of a check from its failed products (and the refund the
    service stated, if any). Idempotent; a check whose charge is not known yet is left for
    :func:`record_charge` to settle when the charge arrives."""
    row = conn.execute(select(_costs).where(_costs.c.check_id == check_id)).mappings().first()
    if row is None:
        return
    failed = (
        conn.execute(
            select(_outcomes.c.product).where(
                _outcomes.c.check_id == check_id,
                _outcomes.c.status == ProductState.FAILED,
                # a result this side refused (out of range) failed here, not at the service
                _outcomes.c.error_code.is_distinct_from(INVALID_RESPONSE),
            )
        )
        .scalars()
        .all()
    )
    stated_value = _int_or_none(stated)
    if stated_value is None:
        stated_value = row["stated_refund_cents"]
    else:
        stated_value = max(stated_value, row["stated_refund_cents"] or 0)
    refund = assumptions.refunded_cents(
        {"total_cents": row["charged_cents"], "ai_cents": row["ai_cents"], "similarity_cents": row["similarity_cents"]},
        failed,
        stated=stated_value,
    )
    if refund != row["refunded_cents"] or stated_value != row["stated_refund_cents"]:
        conn.execute(
            update(_costs)
            .where(_costs.c.check_id == check_id)
            .values(refunded_cents=refund, stated_refund_cents=stated_value, updated_at=utcnow())
        )


def money_of_checks(conn: Connection, check_ids: Iterable[str]) -> dict[str, tuple[int, int]]:
    """``check_id → (charged_cents, refunded_cents)`` for the checks the ledger has a cost for."""
    ids = list(dict.fromkeys(c for c in check_ids if c))
    found: dict[str, tuple[int, int]] = {}
    for i in range(0, len(ids), 500):
        stmt = select(_costs.c.check_id, _costs.c.charged_cents, _costs.c.refunded_cents).where(
            one_of(_costs.c.check_id, ids[i : i + 500], conn)
        )
        for check_id, charged, refunded in conn.execute(stmt).all():
            found[check_id] = (int(charged or 0), int(refunded or 0))
    return found


def total_money(conn: Connection, check_ids: Iterable[str]) -> Money:
    """Charged/refunded of a set of checks, each counted once."""
    found = money_of_checks(conn, check_ids)
    return Money(
        checks=len(found),
        charged_cents=sum(c for c, _ in found.values()),
        refunded_cents=sum(r for _, r in found.values()),
    )


def campaign_money(conn: Connection, campaign: str) -> Money:
    """Charged/refunded of every check of a campaign (all runs, all machines)."""
    stmt = select(
        func.count(),
        func.coalesce(func.sum(_costs.c.charged_cents), 0),
        func.coalesce(func.sum(_costs.c.refunded_cents), 0),
    ).where(_costs.c.campaign == campaign)
    n, charged, refunded = conn.execute(stmt).one()
    return Money(checks=int(n), charged_cents=int(charged), refunded_cents=int(refunded))


def _int_or_none(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
