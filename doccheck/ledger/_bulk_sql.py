"""The statements and connection-level writes behind :mod:`doccheck.ledger._bulk`'s grouped paths.

Why a module of their own: the grouped paths (answers, prepares, claims) share prebuilt
statements and a few writes over an open connection (new charges, submission updates,
``INSERT … ON CONFLICT DO NOTHING``); :mod:`~doccheck.ledger._bulk` keeps the transactions
and their crash-safe order, this module the SQL they run. Nothing here opens a transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    Boolean,
    Connection,
    DateTime,
    Float,
    Integer,
    String,
    Table,
    any_,
    bindparam,
    exists,
    false,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.cache_key import CacheKey
from sqlalchemy.sql.elements import BindParameter, ColumnElement
from sqlalchemy.types import TypeDecorator

from doccheck.client import assumptions
from doccheck.ledger._money import record_charge
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import CampaignBudgetRow, CheckCostRow, ClaimRow, OutcomeRow, SubmissionRow

row_mode_placeholder = object()

# The hot statements, built once with bound parameters (``keys``: an expanding IN list).
# Why: building ``update(...).where(...).values(...)`` and its cache key on every call cost
# more CPU than running the statement (~0.2 ms each, ~14 a round); a prebuilt statement
# memoizes its cache key and its compiled form is reused.
SUBMISSIONS_T, OUTCOMES_T, CLAIMS_T = table_of(SubmissionRow), table_of(OutcomeRow), table_of(ClaimRow)
_T = TypeVar("_T")
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
STATES = select(SUBMISSIONS_T.c.idempotency_key, SUBMISSIONS_T.c.state).where(SUBMISSIONS_T.c.idempotency_key.in_(KEYS))
CURRENT = select(SUBMISSIONS_T.c.idempotency_key, SUBMISSIONS_T.c.campaign, SUBMISSIONS_T.c.submitted_at).where(
    SUBMISSIONS_T.c.idempotency_key.in_(KEYS)
)
#: ``submitting`` again for a key that has a row (not a submitted one: a submitted row is never
#: moved back), one more attempt; the new keys are inserted (``insert_new``).
TO_SUBMITTING = (
    update(SUBMISSIONS_T)
    .where(SUBMISSIONS_T.c.idempotency_key == bindparam("k"), SUBMISSIONS_T.c.state != "submitted")
    .values(
        campaign=bindparam("v_campaign", type_=SUBMISSIONS_T.c.campaign.type),
        document_id=bindparam("v_document_id", type_=SUBMISSIONS_T.c.document_id.type),
        products=bindparam("v_products", type_=SUBMISSIONS_T.c.products.type),
        mode=bindparam("v_mode", type_=SUBMISSIONS_T.c.mode.type),
        state="submitting",
        error_code=None,
        error_message=None,
        attempts=SUBMISSIONS_T.c.attempts + 1,
        updated_at=NOW,
    )
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
            build(postgresql if conn.dialect.name == "postgresql" else sqlite), ("doccheck.ledger._bulk", *key)
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
    ``tests/unit/ledger/test_ledger_bulk.py`` (every statement of a round is a cache hit).
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


def _add_spent(dialect: Any, budgets: Table) -> Any:
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
        if is_postgres(conn):
            pg_update(
                conn, s, "idempotency_key", [{"idempotency_key": r["k"], **{n: r[n] for n in names}} for r in group]
            )
        else:
            conn.execute(stmt, [{"k": r["k"], **{f"v_{n}": r[n] for n in names}} for r in group])


def insert_new(conn: Connection, table: Table, key: str, rows: list[dict[str, Any]]) -> set[str]:
    """``INSERT … ON CONFLICT (key) DO NOTHING RETURNING key`` of ``rows``: the keys inserted."""
    return set(insert_absent(conn, table, (key,), rows, returning=key))


def insert_absent(
    conn: Connection, table: Table, unique: tuple[str, ...], rows: list[dict[str, Any]], *, returning: str | None = None
) -> list[Any]:
    """``INSERT … ON CONFLICT (unique) DO NOTHING`` of ``rows`` (every row the same keys): rows
    whose ``unique`` columns are there already are skipped, in ONE statement (PostgreSQL: one
    fixed text of array parameters), not a look-up of the rows present followed by an insert.
    With ``returning``, that column's values of the rows inserted.

    One statement for every row: an executemany, which SQLAlchemy sends as multi-row
    ``VALUES`` batches ("insertmanyvalues", one compiled statement whatever the count).
    """
    if not rows:
        return []
    if is_postgres(conn):
        return pg_insert(conn, table, rows, conflict=unique[0] if len(unique) == 1 else unique, returning=returning)

    def build(d: Any) -> Any:
        stmt = d.insert(table).on_conflict_do_nothing(index_elements=list(unique))
        return stmt.returning(table.c[returning]) if returning else stmt

    name = f"insert_absent:{table.name}:{','.join(unique)}:{returning or ''}"
    stmt = dialect_statement(conn, name, build)
    result = conn.execute(stmt, rows[0] if len(rows) == 1 else rows)
    return list(result.scalars()) if returning else []


def release(conn: Connection, claims: list[tuple[str, str]], now: datetime) -> None:
    """``RELEASE`` of each (key, owner): the claim freed and its doubt cleared, if the owner still holds it."""
    if is_postgres(conn):
        rows = [{"idempotency_key": k, "owner": o} for k, o in claims]
        fixed = {"owner": None, "expires_at": None, "updated_at": now, "in_doubt": False}
        pg_update(conn, CLAIMS_T, "idempotency_key", rows, match=("owner",), fixed=fixed)
    else:
        conn.execute(RELEASE, [{"k": k, "o": o, "b_now": now} for k, o in claims])


def chunks(items: list[_T], size: int = 500) -> list[list[_T]]:
    """Bounded statements: SQLite allows 32,766 bound parameters, PostgreSQL 65,535."""
    return [items[i : i + size] for i in range(0, len(items), size)]


# PostgreSQL: array parameters instead of multi-row statements (issue 26).
#
# Why: on PostgreSQL an executemany INSERT is sent as multi-row ``VALUES`` statements whose text
# depends on the row count, an executemany UPDATE as one statement per row, and an expanding
# ``IN (...)`` as a statement per list length: the server parses each new text again and never
# reuses a prepared plan. ``INSERT … SELECT … FROM unnest(:a, :b, …)``, ``UPDATE … FROM
# unnest(…)`` and ``= ANY(:keys)`` are ONE fixed text per statement whatever the row count, each
# column one array parameter: psycopg prepares it after a few rounds. SQLite keeps the
# statements above (it has no arrays, and parses locally at a negligible cost).


def is_postgres(conn: Connection) -> bool:
    """Whether ``conn`` speaks PostgreSQL (the array-parameter statements apply)."""
    return bool(conn.dialect.name == "postgresql")


_PG_DIALECT: Any = postgresql.dialect()  # type: ignore[no-untyped-call]


def _pg_column(column: Any) -> tuple[str, bool]:
    """(element type of the column's array parameter, whether it is JSON sent as text)."""
    if isinstance(column.type, JSON):
        return "TEXT", True
    return str(column.type.compile(dialect=_PG_DIALECT)), False


def _recordset_type(column: Any) -> str:
    """The column's type in ``json_to_recordset(…) AS v(col type, …)``: a timestamp is read as
    ``TIMESTAMPTZ`` (its text has an offset), then stored as the array statement stores it."""
    if isinstance(column.type, JSON):
        return "JSON"
    if isinstance(column.type, DateTime):
        return "TIMESTAMPTZ"
    return str(column.type.compile(dialect=_PG_DIALECT))


@dataclass(frozen=True)
class _PgStatement:
    """One statement in its two forms: rows as one array parameter a column (``unnest``), or as
    one JSON parameter (``json_to_recordset``), the faster whenever every value has an exact
    JSON text (psycopg turns each list into an array in Python: a batch of 100 documents took
    1.8 ms of CPU, against 0.45 ms for ``json.dumps``; issue 28)."""

    arrays: Any
    recordset: Any
    json_names: frozenset[str]
    #: column → the Python types its JSON text is read from exactly as from its array (None: a
    #: timestamp, sent as ISO text when aware; an empty set: the arrays whatever the value)
    kinds: dict[str, frozenset[type] | None]

    def params(self, rows: list[dict[str, Any]], names: list[str]) -> tuple[Any, dict[str, Any]]:
        """(the statement to run, its row parameters)."""
        as_json = _json_rows(rows, names, self.kinds)
        if as_json is not None:
            return self.recordset, {"rows": as_json}
        return self.arrays, _arrays(rows, names, self.json_names)

    @classmethod
    def of(cls, table: Table, names: list[str], build: Callable[[str, str, Callable[[str], str]], str]) -> _PgStatement:
        """Both forms of ``build(cols, source, pick)``: ``cols`` the quoted columns, ``source`` the
        rows as ``… AS v(…)``, ``pick(name)`` a row's value of that column (``v."name"``, as JSON)."""
        typed = {n: _pg_column(table.c[n]) for n in names}
        json_names = frozenset(n for n in names if typed[n][1])
        cols = ", ".join(f'"{n}"' for n in names)
        arrays = ", ".join(f"CAST(:a_{n} AS {typed[n][0]}[])" for n in names)
        fields = ", ".join(f'"{n}" {_recordset_type(table.c[n])}' for n in names)

        def from_array(name: str) -> str:
            return f'CAST(v."{name}" AS JSON)' if name in json_names else f'v."{name}"'

        return cls(
            arrays=text(build(cols, f"unnest({arrays}) AS v({cols})", from_array)),
            recordset=text(build(cols, f"json_to_recordset(CAST(:rows AS JSON)) AS v({fields})", lambda n: f'v."{n}"')),
            json_names=json_names,
            kinds={n: _json_kinds(table.c[n]) for n in names},
        )


_NONE = type(None)


def _json_kinds(column: Any) -> frozenset[type] | None:
    """The Python types a column takes as JSON text exactly as the arrays give them (see
    :attr:`_PgStatement.kinds`): a text column texts, an integer column integers (not a bool,
    not 5.0: the array's cast would convert them, the JSON text would be refused)."""
    kind = column.type
    if isinstance(kind, TypeDecorator):  # the ledger's AutoString, UTCDateTime: their stored type
        kind = kind.impl_instance
    if isinstance(kind, JSON):
        return frozenset({object})  # any value json.dumps takes: the array statement dumps it too
    if isinstance(kind, DateTime):
        return None
    if isinstance(kind, Boolean):
        return frozenset({bool, _NONE})
    if isinstance(kind, Integer):
        return frozenset({int, _NONE})
    if isinstance(kind, Float):
        return frozenset({int, float, _NONE})
    if isinstance(kind, String):
        return frozenset({str, _NONE})
    return frozenset()


def _json_rows(rows: list[dict[str, Any]], names: list[str], kinds: dict[str, frozenset[type] | None]) -> str | None:
    """The rows as one JSON array, or None when a value has no exact JSON text for its column (a
    NaN, a naive datetime, an enum, a float for an integer…): then the array statement runs."""
    stamped = []
    for name in names:
        allowed = kinds[name]
        if allowed is not None and object in allowed:
            continue
        seen = {type(r[name]) for r in rows}
        if allowed is None:
            if seen <= {datetime, _NONE} and all(r[name] is None or r[name].tzinfo is not None for r in rows):
                stamped.append(name)  # aware: its ISO text, with its offset, is the instant
                continue
            return None
        if not seen <= allowed:
            return None
    if stamped:
        rows = [{**r, **{n: r[n].isoformat() for n in stamped if r[n] is not None}} for r in rows]
    try:
        return json.dumps(rows, allow_nan=False)
    except (TypeError, ValueError):
        return None


_PG_TEXTS: dict[tuple[Any, ...], _PgStatement] = {}


def _arrays(rows: list[dict[str, Any]], names: list[str], json_names: frozenset[str]) -> dict[str, list[Any]]:
    """One list per column (JSON values serialised as SQLAlchemy's JSON type does)."""
    out: dict[str, list[Any]] = {}
    for name in names:
        values = [r[name] for r in rows]
        if name in json_names:
            values = [None if v is None else json.dumps(v) for v in values]
        out[f"a_{name}"] = values
    return out


def pg_insert(
    conn: Connection, table: Table, rows: list[dict[str, Any]], *, conflict: str | tuple[str, ...] | None = None,
    returning: str | None = None,
) -> list[Any]:  # fmt: skip
    """``INSERT INTO table (…) SELECT … FROM unnest(:a_col, …)`` (or ``FROM json_to_recordset(:rows)``,
    see :class:`_PgStatement`) of ``rows`` (every row the same keys); with ``conflict`` (a column,
    or the columns of a unique constraint), ``ON CONFLICT (…) DO NOTHING``; with ``returning``,
    the values of that column for the rows inserted."""
    if not rows:
        return []
    names = list(rows[0])
    cache = ("insert", table.name, tuple(names), conflict, returning)
    if cache not in _PG_TEXTS:

        def build(cols: str, source: str, pick: Callable[[str], str]) -> str:
            sql = f'INSERT INTO "{table.name}" ({cols}) SELECT {", ".join(pick(n) for n in names)} FROM {source}'
            if conflict:
                targets = ", ".join(f'"{c}"' for c in ((conflict,) if isinstance(conflict, str) else conflict))
                sql += f" ON CONFLICT ({targets}) DO NOTHING"
            return sql + (f' RETURNING "{returning}"' if returning else "")

        _PG_TEXTS[cache] = _PgStatement.of(table, names, build)
    stmt, params = _PG_TEXTS[cache].params(rows, names)
    result = conn.execute(stmt, params)
    return list(result.scalars()) if returning else []


def pg_update(
    conn: Connection, table: Table, key: str, rows: list[dict[str, Any]], *, match: tuple[str, ...] = (),
    fixed: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """``UPDATE table SET col = v.col, … FROM unnest(:a_key, :a_col, …) AS v WHERE table.key = v.key``
    (or ``FROM json_to_recordset(:rows)``, see :class:`_PgStatement`):
    each row's ``key`` names the row to update, ``match`` are more columns that must equal the
    row's value (not set), the other keys are set; ``fixed`` are the same values for every row.

    The rows come as ``(SELECT * FROM … LIMIT :n_rows)``, their count: the planner's only way to
    know it. It takes a set-returning function for 100 rows, and joined 100 rows by hashing the
    whole table: a round's ``UPDATE submissions`` read all 6,000 rows of a 6,000-document run
    (1.46 ms), where a nested loop over the key's index takes 0.20 ms (issue 26)."""
    if not rows:
        return
    fixed = fixed or {}
    names = list(rows[0])
    cache = ("update", table.name, key, tuple(names), match, tuple(fixed))
    if cache not in _PG_TEXTS:

        def build(cols: str, source: str, pick: Callable[[str], str]) -> str:
            sets = [f'"{n}" = {pick(n)}' for n in names if n != key and n not in match]
            sets += [f'"{n}" = :f_{n}' for n in fixed]
            where = " AND ".join(f't."{n}" = v."{n}"' for n in (key, *match))
            counted = f"(SELECT * FROM {source} LIMIT :n_rows) AS v"
            return f'UPDATE "{table.name}" AS t SET {", ".join(sets)} FROM {counted} WHERE {where}'

        _PG_TEXTS[cache] = _PgStatement.of(table, names, build)
    stmt, params = _PG_TEXTS[cache].params(rows, names)
    conn.execute(stmt, {**params, "n_rows": len(rows), **{f"f_{n}": v for n, v in fixed.items()}})


def any_keys(column: ColumnElement[Any], name: str = "b_keys") -> ColumnElement[bool]:
    """``column = ANY(:name)``: one array parameter instead of an expanding ``IN`` list."""
    return column == any_(bindparam(name, type_=postgresql.ARRAY(String)))


#: The ``IN (:b_keys)`` statements above with ``= ANY(:b_keys)`` (PostgreSQL), same parameters.
PG_CLAIM = (
    update(CLAIMS_T)
    .where(
        any_keys(CLAIMS_T.c.idempotency_key),
        or_(CLAIMS_T.c.owner.is_(None), CLAIMS_T.c.owner == OWNER, CLAIMS_T.c.expires_at < NOW),
    )
    .values(owner=OWNER, expires_at=bindparam("b_expires"), updated_at=NOW)
    .returning(CLAIMS_T.c.idempotency_key)
)
#: A round's claims of one owner in ONE statement (PostgreSQL): ``PG_CLAIM`` takes the keys whose
#: claim is free, its own or expired; the keys of ``:b_new`` without a claim row get one (``ON
#: CONFLICT DO NOTHING``: a row there, taken or not, is left to ``taken``); returns the keys won.
#: The same rows as the two statements one after the other, whichever sub-statement runs first:
#: the update sees only rows there before the statement, the insert's conflict check sees every
#: row there, updated or not. Why: a round trip fewer a round (issue 26).
_TAKEN = PG_CLAIM.cte("taken")
_ADDED = (
    postgresql.insert(CLAIMS_T)
    .from_select(
        ["idempotency_key", "owner", "expires_at", "in_doubt", "updated_at"],
        select(
            func.unnest(bindparam("b_new", type_=postgresql.ARRAY(String))),
            bindparam("b_owner", type_=CLAIMS_T.c.owner.type),
            bindparam("b_expires", type_=CLAIMS_T.c.expires_at.type),
            false(),
            bindparam("b_now", type_=CLAIMS_T.c.updated_at.type),
        ),
    )
    .on_conflict_do_nothing(index_elements=["idempotency_key"])
    .returning(CLAIMS_T.c.idempotency_key)
    .cte("added")
)
PG_CLAIM_OR_ADD = union_all(select(_TAKEN.c.idempotency_key), select(_ADDED.c.idempotency_key))
PG_SENDING = (
    update(CLAIMS_T)
    .where(any_keys(CLAIMS_T.c.idempotency_key), CLAIMS_T.c.owner == OWNER)
    .values(in_doubt=True, sent_by=OWNER, first_sent_at=func.coalesce(CLAIMS_T.c.first_sent_at, NOW), updated_at=NOW)
    .returning(CLAIMS_T.c.idempotency_key)
)
PG_SUBMISSIONS = select(SUBMISSIONS_T).where(any_keys(SUBMISSIONS_T.c.idempotency_key))
PG_STATES = select(SUBMISSIONS_T.c.idempotency_key, SUBMISSIONS_T.c.state).where(
    any_keys(SUBMISSIONS_T.c.idempotency_key)
)

#: A round's two reads for its answers in ONE statement (PostgreSQL): the submission rows of the
#: keys, then a row per check id that already has outcomes (``has_outcomes``). Why: one round trip
#: fewer a round, and the outcomes by their index: ``check_id = ANY(:b_checks)`` on a table never
#: analysed counts each id as 0.5 % of the table (``check_id`` alone is not unique), so it read
#: the whole table every round of a new ledger's first minute (16 ids: 8 %; 0.36 ms a round at
#: 6,000 documents, growing with the term). ``EXISTS`` per id is a probe of
#: ``uq_outcomes_check_product`` without statistics; ``LIMIT :n_checks`` gives the planner the
#: number of ids (a set-returning function counts as 100), so small tables are probed too (issue 26).
_CHECK_IDS = (
    select(func.unnest(bindparam("b_checks", type_=postgresql.ARRAY(String))).label("check_id"))
    .limit(bindparam("n_checks", type_=Integer))
    .subquery("u")
)
PG_ANSWER_LOOKUPS = union_all(
    select(SUBMISSIONS_T.c.idempotency_key, SUBMISSIONS_T.c.campaign, SUBMISSIONS_T.c.submitted_at,
           literal(False).label("has_outcomes")).where(any_keys(SUBMISSIONS_T.c.idempotency_key)),
    select(_CHECK_IDS.c.check_id, null(), null(), literal(True)).where(
        exists().where(OUTCOMES_T.c.check_id == _CHECK_IDS.c.check_id)
    ),
)  # fmt: skip


def answer_lookups(conn: Connection, keys: list[str], check_ids: list[str]) -> tuple[dict[str, Any], set[str]]:
    """(the submission row of each key that has one: its ``campaign`` and ``submitted_at``; the
    check ids that already have outcomes), for a round's answers."""
    current: dict[str, Any] = {}
    with_outcomes: set[str] = set()
    if is_postgres(conn):
        for key_chunk, check_chunk in zip(chunks(keys), chunks(check_ids), strict=True):
            params = {"b_keys": key_chunk, "b_checks": check_chunk, "n_checks": len(check_chunk)}
            for r in conn.execute(PG_ANSWER_LOOKUPS, params):
                if r.has_outcomes:
                    with_outcomes.add(r.idempotency_key)
                else:
                    current[r.idempotency_key] = r
        return current, with_outcomes
    for chunk in chunks(keys):
        current.update((r.idempotency_key, r) for r in conn.execute(CURRENT, {"b_keys": chunk}))
    for chunk in chunks(check_ids):
        with_outcomes.update(conn.execute(WITH_OUTCOMES, {"b_checks": chunk}).scalars())
    return current, with_outcomes


_PG_VARIANTS = {id(SENDING): PG_SENDING, id(SUBMISSIONS): PG_SUBMISSIONS,
                id(STATES): PG_STATES}  # fmt: skip


def keyed(conn: Connection, stmt: Any) -> Any:
    """``stmt`` (one of the ``IN (:b_keys)`` statements above) as this connection's dialect runs it best."""
    return _PG_VARIANTS.get(id(stmt), stmt) if is_postgres(conn) else stmt
