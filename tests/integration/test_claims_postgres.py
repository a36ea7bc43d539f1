"""The claim tests of tests/unit/ledger/test_claims.py, re-run on a real PostgreSQL server."""

from __future__ import annotations

import pytest

from tests.fixtures.postgres import postgres_ledger
from tests.unit.ledger.test_claims import *  # noqa: F403 - re-run the whole claims contract

pytestmark = [pytest.mark.integration, pytest.mark.postgres]
ledger = postgres_ledger  # the SQLite contract's ``ledger``, on PostgreSQL
