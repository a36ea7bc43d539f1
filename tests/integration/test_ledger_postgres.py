"""The ledger's unit tests, run again on a real PostgreSQL server (psycopg 3).

Every test of tests/unit/ledger/test_ledger.py is imported here and gets a ``ledger`` on a
fresh PostgreSQL database instead of SQLite, so both engines pass the same contract
(JSON columns, unique keys, dedup of events, time zones, report rows).
"""

from __future__ import annotations

import pytest

from doccheck.ledger import Ledger
from tests.fixtures.postgres import postgres_ledger
from tests.unit.ledger.test_ledger import *  # noqa: F403 - re-run the whole ledger contract
from tests.unit.ledger.test_listed_files import (  # noqa: F401 - a store's files kept, on PostgreSQL too
    test_purged_with_the_campaign,
    test_the_functions_on_their_own,
    test_the_word_store_answers_for_a_stores_files,
)
from tests.unit.ledger.test_pair_passages import (  # noqa: F401 - a pair's passages kept, on PostgreSQL too
    test_kept_once_and_found_by_both_hashes_and_the_basis,
)
from tests.unit.ledger.test_pair_passages import (  # noqa: F401
    test_purged_with_the_campaign as test_passages_purged_with_the_campaign,
)
from tests.unit.ledger.test_report_inputs import (  # noqa: F401 - the report inputs' digest, on PostgreSQL too
    test_a_change_a_report_shows_changes_the_digest,
    test_the_same_rows_in_another_run_give_the_same_digest,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]
ledger = postgres_ledger  # the SQLite contract's ``ledger``, on PostgreSQL


def test_plain_postgresql_url_uses_psycopg3(postgres_database: str) -> None:
    led = Ledger(postgres_database.replace("postgresql+psycopg://", "postgresql://"))
    assert led.engine.dialect.driver == "psycopg"
    led.start_run(campaign="c")
    led.close()


def test_pipeline_run_on_postgres(emulator: object, postgres_database: str, tmp_path: object) -> None:
    """A whole submit → poll → report cycle with the ledger on PostgreSQL, and a free rerun."""
    import asyncio

    from tests.factories import assert_complete, plan_for, write_corpus
    from tests.factories import start_pipeline_run as start
    from tests.factories import submit_plan as submit
    from tests.factories import wait_for_run as wait

    led = Ledger(postgres_database)
    api_key = emulator.new_account()  # type: ignore[attr-defined]
    plan = plan_for(write_corpus(tmp_path / "c", big=False))  # type: ignore[operator]
    run_id = start(led, plan)
    first = asyncio.run(submit(emulator.base_url, api_key, led, run_id, plan))  # type: ignore[attr-defined]
    assert first.submitted == 3
    emulator.advance(2)  # type: ignore[attr-defined]
    waited = asyncio.run(wait(emulator.base_url, api_key, led, run_id, grace_seconds=0))  # type: ignore[attr-defined]
    assert not waited.timed_out
    assert_complete(led.report_rows(run_id=run_id), 3)
    again = asyncio.run(submit(emulator.base_url, api_key, led, start(led, plan), plan))  # type: ignore[attr-defined]
    assert (again.already_done, again.submitted) == (3, 0)
    led.close()


def test_a_run_summary_first_analyses_the_tables_the_run_filled(ledger: Ledger) -> None:
    """A run that wrote many rows has its tables analysed before its summary reads them back:
    until autovacuum's next pass the planner would believe the run has no documents."""
    import time
    from types import SimpleNamespace

    from sqlalchemy import text

    from doccheck.ledger import document_row, record_plan_group

    run_id = ledger.start_run(campaign="c")
    rows = [document_row(run_id, "c", SimpleNamespace(document_id=f"d{i}", products=("ai",), idempotency_key=f"k{i}"))
            for i in range(400)]  # fmt: skip
    record_plan_group(ledger, run_id, rows, [])
    stats = text("SELECT n_mod_since_analyze, last_analyze FROM pg_stat_user_tables WHERE relname = 'documents'")
    deadline = time.monotonic() + 30  # the writer's backend reports its counts when it next idles (<= 10 s)
    with ledger.engine.connect() as conn:
        while conn.execute(stats).one()[0] < 400 and time.monotonic() < deadline:
            conn.rollback()
            time.sleep(0.2)
    assert ledger.run_summary(run_id)["documents"] == 400
    with ledger.engine.connect() as conn:
        modified, analysed = conn.execute(stats).one()
    assert analysed is not None and modified == 0
