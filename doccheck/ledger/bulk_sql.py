"""The statements and connection-level writes behind :mod:`doccheck.ledger.bulk`'s grouped paths.

Why a module of their own: the grouped paths (answers, prepares, claims) share prebuilt
statements and a few writes over an open connection (new charges, submission updates,
``INSERT … ON CONFLICT DO NOTHING``); :mod:`~doccheck.ledger.bulk` keeps the transactions
and their crash-safe order, this module the SQL they run. Nothing here opens a transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, bindparam, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.cache_key import CacheKey
from sqlalchemy.sql.elements import BindParameter

from doccheck.client import assumptions
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger.money import record_charge
from doccheck.ledger.tables import CampaignBudgetRow, CheckCostRow, ClaimRow, OutcomeRow, SubmissionRow

row_mode_placeholder = object()

# The hot statements, built once with bound parameters (``keys``: an expanding IN list).
# Why: building ``update(...).where(...).values(...)`` and its cache key on every call cost
# more CPU than running the statement (~0.2 ms each, ~14 a round); a prebuilt statement
# memoizes its cache key and its compiled form is reused.
SUBMISSIONS_T, OUTCOMES_T, CLAIMS_T = table_of(SubmissionRow), table_of(OutcomeRow), table_of(ClaimRow)
KEYS: BindParameter[Any] = bindparam("b_keys", expanding=True)
NOW: BindParameter[Any] = bindparam("b_now")
OWNER: BindParameter[Any] = bindparam("b_owner")
CLAIM = (
    update(CLAIMS_T)
    .where(
        CLAIMS_T.c.idempotency_key.in_(KEYS),
        or_(CLAIMS_T.c.owner.is_(None), CLAIMS_T.c.owner == OWNER, CLAIMS_T.c.expires_at < NOW),
    )
    .values(owner=OWNER, expires_at=bindparam("b_expires"), updated_at=NOW)
    .returning(CLAIMS_T.c.idempotency_key)
)
SENDING = (
    update(CLAIMS_T)
    .where(CLAIMS_T.c.idempotency_key.in_(KEYS), CLAIMS_T.c.owner == OWNER)
    .values(in_doubt=True, sent_by=OWNER, first_sent_at=func.coalesce(CLAIMS_T.c.first_sent_at, NOW), updated_at=NOW)
    .returning(CLAIMS_T.c.idempotency_key)
)
RELEASE = (
    update(CLAIMS_T)
    .where(CLAIMS_T.c.idempotency_key == bindparam("k"), CLAIMS_T.c.owner == bindparam("o"))
    .values(owner=None, expires_at=None, updated_at=bindparam("b_now"), in_doubt=False)
)
SUBMISSIONS = select(SUBMISSIONS_T).where(SUBMISSIONS_T.c.idempotency_key.in_(KEYS))
CURRENT = select(SUBMISSIONS_T.c.idempotency_key, SUBMISSIONS_T.c.campaign, SUBMISSIONS_T.c.submitted_at).where(
    SUBMISSIONS_T.c.idempotency_key.in_(KEYS)
)
WITH_OUTCOMES = select(OUTCOMES_T.c.check_id).where(OUTCOMES_T.c.check_id.in_(bindparam("b_checks", expanding=True)))
NEW_OUTCOMES = insert(OUTCOMES_T)
_BY_DIALECT: dict[tuple[str, str], Any] = {}


def dialect_statement(conn: Connection, name: str, build: Callable[[Any], Any]) -> Any:
    """A statement that depends on the dialect (``INSERT … ON CONFLICT``), built once per
    dialect, and compiled once per engine (see :func:`fixed_cache_key`)."""
    key = (conn.dialect.name, name)
    stmt = _BY_DIALECT.get(key)
    if stmt is None:
        stmt = _BY_DIALECT[key] = fixed_cache_key(
            build(postgresql if conn.dialect.name == "postgresql" else sqlite), ("doccheck.ledger.bulk", *key)
        )
    return stmt


def fixed_cache_key(stmt: Any, key: tuple[str, ...]) -> Any:
    """Let SQLAlchemy's compiled cache keep ``stmt`` under ``key``.

    Why: SQLAlchemy 2.0 never caches the dialects' ``INSERT … ON CONFLICT`` (their
    ``Insert`` says ``inherit_cache = False``; 2.1 caches them, but breaks Prefect's
    server), so each round compiled its four upserts again: ~0.25 ms each, a fifth of a
    round's CPU (issue 10). These statements are module constants with no literal values
    (rows are executemany parameters), so a constant key per statement is exact; the
    engine's cache still keys it by dialect and parameter names. Checked by
    ``tests/unit/test_ledger_bulk.py`` (every statement of a round is a cache hit).
    """
    cache_key = CacheKey(key, [])
    stmt._generate_cache_key = lambda: cache_key  # shadows the memoized method on this instance
    return stmt


def record_new_charges(conn: Connection, charges: list[tuple[str, str | None, Any]], now: datetime) -> None:
    """``record_charge`` of many checks: one multi-row insert of the charges never seen,
    counted in their campaigns' budgets at once (one ``UPDATE`` per campaign).

    The grouped answers are fresh checks (all products processing, no outcome yet), so
    no refund is due but the one the service may state: the rows are written as
    ``record_charge`` leaves them (``budget_counted`` true, ``refunded_cents`` from the
    stated refund). A check whose charge is already stored (a poll or an event came
    first), or without a campaign, goes through ``record_charge`` itself: the insert's
    ``ON CONFLICT DO NOTHING … RETURNING`` says which.
    """
    costs = table_of(CheckCostRow)
    budgets = table_of(CampaignBudgetRow)
    rows: dict[str, dict[str, Any]] = {}
    sources: dict[str, tuple[str | None, Any]] = {}
    slow: list[tuple[str, str | None, Any]] = []
    for check_id, campaign, cost in charges:
        if cost is None:
            continue  # as record_charge: nothing to store
        if not campaign or check_id in rows:
            slow.append((check_id, campaign, cost))
            continue
        sources[check_id] = (campaign, cost)
        stated = _int_or_none(cost.get(assumptions.REFUND_FIELD) if isinstance(cost, dict) else None)
        stated = None if stated is None else max(stated, 0)
        charged = assumptions.charged_cents(cost)
        ai, similarity = assumptions.product_cents(cost, "ai"), assumptions.product_cents(cost, "similarity")
        refund = assumptions.refunded_cents(
            {"total_cents": charged, "ai_cents": ai, "similarity_cents": similarity}, [], stated=stated
        )
        rows[check_id] = {
            "check_id": check_id, "campaign": campaign, "charged_cents": charged, "ai_cents": ai,
            "similarity_cents": similarity, "refunded_cents": refund, "stated_refund_cents": stated,
            "budget_counted": True, "created_at": now, "updated_at": now,
        }  # fmt: skip
    inserted = insert_new(conn, costs, "check_id", list(rows.values()))
    spent: dict[str, int] = {}
    for check_id in inserted:
        row = rows[check_id]
        spent[row["campaign"]] = spent.get(row["campaign"], 0) + row["charged_cents"]
    if spent:
        add = dialect_statement(conn, "add_spent", lambda d: _add_spent(d, budgets))
        for campaign in sorted(spent):
            conn.execute(add, {"campaign": campaign, "spent_cents": spent[campaign], "reserved_cents": 0,
                               "updated_at": now})  # fmt: skip
    slow += [(check_id, campaign, cost) for check_id, (campaign, cost) in sources.items() if check_id not in inserted]
    for check_id, campaign, cost in slow:
        record_charge(conn, check_id, campaign, cost)


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _add_spent(dialect: Any, budgets: Any) -> Any:
    """``ensure_budget_row`` + ``spent_cents += cents`` as one upsert (same row either way)."""
    stmt = dialect.insert(budgets)
    return stmt.on_conflict_do_update(
        index_elements=["campaign"],
        set_={"spent_cents": budgets.c.spent_cents + stmt.excluded.spent_cents, "updated_at": stmt.excluded.updated_at},
    )


_SHAPES: dict[tuple[bool, bool], tuple[list[str], Any]] = {}


def update_submissions(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """One executemany per shape (mode and upload id given or not), as ``mark_submitted`` sets them."""
    s = table_of(SubmissionRow)
    base = ("state", "check_id", "cost_cents", "words", "replayed", "error_code", "error_message",
            "updated_at", "submitted_at")  # fmt: skip
    shapes: dict[tuple[bool, bool], list[dict[str, Any]]] = {}
    for r in rows:
        shapes.setdefault((r["mode"] is not row_mode_placeholder, r["upload_id"] is not None), []).append(r)
    for shape, group in shapes.items():
        if shape not in _SHAPES:
            names = list(base) + (["mode"] if shape[0] else []) + (["upload_id"] if shape[1] else [])
            stmt = (
                update(s).where(s.c.idempotency_key == bindparam("k")).values({n: bindparam(f"v_{n}") for n in names})
            )
            _SHAPES[shape] = (names, stmt)
        names, stmt = _SHAPES[shape]
        conn.execute(stmt, [{"k": r["k"], **{f"v_{n}": r[n] for n in names}} for r in group])


def insert_new(conn: Connection, table: Table, key: str, rows: list[dict[str, Any]]) -> set[str]:
    """``INSERT … ON CONFLICT (key) DO NOTHING RETURNING key`` of ``rows``; the keys inserted.

    One statement for every row: an executemany, which SQLAlchemy sends as multi-row
    ``VALUES`` batches ("insertmanyvalues", one compiled statement whatever the count).
    """
    if not rows:
        return set()
    stmt = dialect_statement(
        conn,
        f"insert_new:{table.name}",
        lambda d: d.insert(table).on_conflict_do_nothing(index_elements=[key]).returning(table.c[key]),
    )
    if len(rows) == 1:
        return set(conn.execute(stmt, rows[0]).scalars())
    return set(conn.execute(stmt, rows).scalars())


def chunks(items: list[Any], size: int = 500) -> list[list[Any]]:
    """Bounded statements: SQLite allows 32,766 bound parameters, PostgreSQL 65,535."""
    return [items[i : i + size] for i in range(0, len(items), size)]
