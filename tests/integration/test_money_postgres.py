"""The money and campaign-budget unit tests, run again on a real PostgreSQL server."""

from __future__ import annotations

import pytest

from tests.fixtures.postgres import postgres_ledger
from tests.unit.ledger.test_money import *  # noqa: F403 - re-run the whole money contract

pytestmark = [pytest.mark.integration, pytest.mark.postgres]
ledger = postgres_ledger  # the SQLite contract's ``ledger``, on PostgreSQL
