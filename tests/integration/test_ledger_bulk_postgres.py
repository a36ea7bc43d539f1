"""The grouped ledger writes (tests/unit/test_ledger_bulk.py) again on a real PostgreSQL server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from doccheck.ledger import Ledger
from tests.unit.test_ledger_bulk import *  # noqa: F403 - re-run the grouped-writes contract

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def _database(server_url: str) -> str:
    name = f"bulk_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


@pytest.fixture
def ledgers(postgres_url: str) -> Iterator[tuple[Ledger, Ledger]]:  # overrides the SQLite pair
    one, grouped = Ledger(_database(postgres_url)), Ledger(_database(postgres_url))
    yield one, grouped
    one.close()
    grouped.close()


@pytest.fixture
def fresh_url(postgres_url: str) -> str:  # overrides the SQLite file
    return _database(postgres_url)
