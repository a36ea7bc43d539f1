"""Fixtures shared by the unit tests (a module that defines its own ``ledger`` keeps it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from doccheck.ledger import Ledger


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    """A fresh SQLite ledger in the test's own folder."""
    led = Ledger(f"sqlite:///{tmp_path / 'p.db'}")
    yield led
    led.close()
