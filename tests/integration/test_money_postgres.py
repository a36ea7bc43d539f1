"""The money and campaign-budget unit tests, run again on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from doccheck.ledger import Ledger
from tests.unit.test_money import *  # noqa: F403 - re-run the whole money contract

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture
def ledger(postgres_database: str) -> Iterator[Ledger]:  # overrides the SQLite fixture
    led = Ledger(postgres_database)
    yield led
    led.close()
