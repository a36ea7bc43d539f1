"""The grouped ledger writes (tests/unit/ledger/test_ledger_bulk.py) again on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import text

from doccheck.ledger import Ledger
from tests.unit.ledger.test_ledger_bulk import *  # noqa: F403 - re-run the grouped-writes contract

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture
def ledgers(postgres_databases: Callable[[], str]) -> Iterator[tuple[Ledger, Ledger]]:  # overrides the SQLite pair
    one, grouped = Ledger(postgres_databases()), Ledger(postgres_databases())
    yield one, grouped
    one.close()
    grouped.close()


@pytest.fixture
def fresh_url(postgres_database: str) -> str:  # overrides the SQLite file
    return postgres_database


def test_rows_sent_as_json_are_stored_as_the_array_statement_stores_them(postgres_database: str) -> None:
    """``pg_insert``'s two forms (``json_to_recordset`` and ``unnest``) store the same text in a
    JSON column and the same instant in a timestamp, whatever the session's time zone; a value
    with no exact JSON text (a NaN, a naive datetime) takes the array form."""
    from datetime import UTC, datetime, timedelta, timezone

    from doccheck.ledger import SubmissionRow
    from doccheck.ledger import _bulk_sql as bulk_sql

    table = bulk_sql.table_of(SubmissionRow)
    summer = datetime(2026, 3, 29, 1, 30, tzinfo=timezone(timedelta(hours=2)))

    def row(key: str, at: datetime) -> dict[str, object]:
        return {"idempotency_key": key, "campaign": "c", "document_id": key, "state": "submitted", "mode": "text",
                "products": ["ai", 'é"x'], "created_at": at, "updated_at": at, "submitted_at": None,
                "cost_cents": 5, "words": 10, "replayed": False, "attempts": 0}  # fmt: skip

    names = list(row("k", summer))
    statement = bulk_sql._PgStatement.of(
        table, names,
        lambda cols, source, pick: f'INSERT INTO "submissions" ({cols}) SELECT {", ".join(pick(n) for n in names)} '
        f"FROM {source}",
    )  # fmt: skip
    ledger = Ledger(postgres_database)
    try:
        with ledger.engine.begin() as conn:
            conn.execute(text("SET TIME ZONE 'Europe/Berlin'"))
            rows = [row("arrays-1", datetime.now(UTC)), row("arrays-2", summer)]
            conn.execute(statement.arrays, bulk_sql._arrays(rows, names, statement.json_names))
            rows = [row("json-1", rows[0]["created_at"]), row("json-2", summer)]  # type: ignore[arg-type]
            chosen, params = statement.params(rows, names)
            assert chosen is statement.recordset  # texts, integers, a bool, aware timestamps, JSON
            conn.execute(chosen, params)
            stored = conn.execute(
                text("SELECT idempotency_key, products::text, created_at::text, cost_cents, replayed FROM submissions")
            ).all()
        by_key = {r[0]: r[1:] for r in stored}
        assert by_key["arrays-1"] == by_key["json-1"] and by_key["arrays-2"] == by_key["json-2"]
        # what the array's cast would convert, or JSON cannot say exactly: the arrays, as before
        for column, value in (("cost_cents", 5.0), ("cost_cents", True), ("created_at", datetime(2026, 1, 1)),
                              ("products", [float("nan")]), ("state", b"submitted")):  # fmt: skip
            assert statement.params([{**row("k", summer), column: value}], names)[0] is statement.arrays, column
    finally:
        ledger.close()


def test_a_rounds_update_finds_its_rows_by_index_in_a_table_never_analyzed(postgres_database: str) -> None:
    """``pg_update`` tells the planner how many rows it sends (``LIMIT :n_rows``): without it a
    set-returning function counts as 100 rows, and the join hashed every row of the table
    (a sequential scan a round, a run's whole table each time)."""
    from datetime import UTC, datetime

    from doccheck.ledger import SubmissionRow
    from doccheck.ledger import _bulk_sql as bulk_sql

    table = bulk_sql.table_of(SubmissionRow)
    now = datetime.now(UTC)
    ledger = Ledger(postgres_database)
    try:
        with ledger.engine.begin() as conn:
            rows = [
                {"idempotency_key": f"k-{i}", "campaign": "c", "document_id": f"d-{i}", "state": "claimed",
                 "mode": "text", "products": ["ai"], "attempts": 0, "replayed": False, "created_at": now,
                 "updated_at": now}
                for i in range(20_000)
            ]  # fmt: skip
            for chunk in bulk_sql.chunks(rows):
                bulk_sql.pg_insert(conn, table, chunk)
            updates = [{"idempotency_key": f"k-{i}", "state": "submitted", "check_id": f"chk_{i}"} for i in range(16)]
            bulk_sql.pg_update(conn, table, "idempotency_key", updates)
            states = conn.execute(text("SELECT state, count(*) FROM submissions GROUP BY state")).all()
            assert sorted(states) == [("claimed", 19_984), ("submitted", 16)]
            (statement,) = [v for k, v in bulk_sql._PG_TEXTS.items() if k[:2] == ("update", "submissions")
                            and k[3] == ("idempotency_key", "state", "check_id")]  # fmt: skip
            chosen, params = statement.params(updates, list(updates[0]))
            plan = conn.execute(text(f"EXPLAIN {chosen.text}"), {**params, "n_rows": 16}).scalars().all()
        assert not any("Seq Scan on submissions" in line for line in plan), plan
        assert any("Index Scan" in line and "submissions" in line for line in plan), plan
    finally:
        ledger.close()


def test_a_rounds_answer_lookups_read_outcomes_by_index_in_a_table_never_analyzed(postgres_database: str) -> None:
    """``answer_lookups`` reads a round's submissions and the outcomes of its check ids in ONE
    statement, the outcomes through ``uq_outcomes_check_product``: ``check_id = ANY(…)`` on a
    table never analysed took each id for 0.5 % of the table and read all of it every round."""
    from datetime import UTC, datetime

    from doccheck.ledger import OutcomeRow, SubmissionRow
    from doccheck.ledger import _bulk_sql as bulk_sql

    now = datetime.now(UTC)
    ledger = Ledger(postgres_database)
    try:
        with ledger.engine.begin() as conn:
            for chunk in bulk_sql.chunks(list(range(20_000))):
                bulk_sql.pg_insert(conn, bulk_sql.table_of(OutcomeRow), [
                    {"check_id": f"chk_{i}", "product": "ai", "campaign": "c", "status": "processing",
                     "fetched": False, "updated_at": now}
                    for i in chunk
                ])  # fmt: skip
            bulk_sql.pg_insert(conn, bulk_sql.table_of(SubmissionRow), [
                {"idempotency_key": f"k-{i}", "campaign": "c", "document_id": f"d-{i}", "state": "sending",
                 "mode": "text", "products": ["ai"], "attempts": 1, "replayed": False, "created_at": now,
                 "updated_at": now, "submitted_at": now if i == 0 else None}
                for i in range(3)
            ])  # fmt: skip
            keys = ["k-0", "k-1", "k-2", *(f"k-absent-{i}" for i in range(13))]  # a round: 16 answers
            checks = ["chk_5", "chk_new", "chk_19999", *(f"chk_other_{i}" for i in range(13))]
            current, with_outcomes = bulk_sql.answer_lookups(conn, keys, checks)
            assert sorted(current) == ["k-0", "k-1", "k-2"] and with_outcomes == {"chk_5", "chk_19999"}
            assert current["k-0"].campaign == "c" and current["k-0"].submitted_at == now
            assert current["k-1"].submitted_at is None
            compiled = bulk_sql.PG_ANSWER_LOOKUPS.compile(dialect=conn.dialect)
            params = {"b_keys": keys, "b_checks": checks, "n_checks": len(checks)}
            plan = conn.exec_driver_sql(f"EXPLAIN {compiled.string}", compiled.construct_params(params)).scalars().all()
        assert not any("Seq Scan on outcomes" in line for line in plan), plan
        assert any("uq_outcomes_check_product" in line for line in plan), plan
    finally:
        ledger.close()


def test_racing_grouped_claims_give_each_key_to_one_owner(postgres_database: str) -> None:
    """``PG_CLAIM_OR_ADD`` takes and adds claims in one statement: four writers (their own
    connections) claiming the same keys at once, some with a free claim row, some with an
    expired one, most with none, win each key exactly once, and the row names the winner."""
    import threading

    from doccheck.ledger._bulk import ClaimRequest, record_claims

    url = postgres_database
    keys = [f"k-{i:03d}" for i in range(120)]
    owners = [f"host:{n}:racer" for n in range(2, 6)]  # live owners elsewhere: no dead-owner take-over
    setup = Ledger(url)
    ledgers: list[Ledger] = []
    try:
        for key in keys[:20]:
            assert setup.claim(key, "host:9:old", lease_seconds=-1)  # expired
        for key in keys[20:40]:
            assert setup.claim(key, "host:9:old")
            setup.release_claim(key, "host:9:old", settled=True)  # free
        ledgers += [Ledger(url) for _ in owners]
        barrier = threading.Barrier(len(owners))
        results: dict[str, list[tuple[bool, object]]] = {}

        def race(ledger: Ledger, owner: str) -> None:
            items = [ClaimRequest(k, owner, 120.0) for k in keys]
            barrier.wait()
            results[owner] = record_claims(ledger, items)

        threads = [threading.Thread(target=race, args=pair) for pair in zip(ledgers, owners, strict=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        winners = {k: [o for o in owners if results[o][i][0]] for i, k in enumerate(keys)}
        assert all(len(w) == 1 for w in winners.values()), {k: w for k, w in winners.items() if len(w) != 1}
        with setup.engine.connect() as conn:
            held = dict(conn.execute(text("SELECT idempotency_key, owner FROM submission_claims")).tuples().all())
        assert held == {k: w[0] for k, w in winners.items()}
    finally:
        for ledger in ledgers:
            ledger.close()
        setup.close()
