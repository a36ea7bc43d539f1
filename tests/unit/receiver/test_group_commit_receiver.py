"""The receiver's group commit (issue 39): many deliveries a transaction, each its own answer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from doccheck.client import Event
from doccheck.config import Settings
from doccheck.ledger import Ledger
from doccheck.receiver._group_commit import GroupWriter
from tests.fixtures.events import event_body


def _event(event_id: str) -> tuple[Any, bytes]:
    body = event_body(event_id, "chk-1", "ai")
    return Event.model_validate_json(body), body


def test_a_group_stores_each_id_once_and_answers_each_delivery(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    try:
        assert ledger.record_events([_event("a"), _event("b"), _event("a")]) == [True, True, False]
        assert ledger.record_events([_event("b"), _event("c")]) == [False, True]
        writer = GroupWriter(ledger)

        async def flood() -> list[bool]:
            return await asyncio.gather(*(writer.store(*_event(f"e{i % 30}")) for i in range(90)))

        stored = asyncio.run(flood())
        assert stored.count(True) == 30 and len(ledger.events()) == 33
    finally:
        ledger.close()


class Poisoned:
    """A ledger whose group insert fails when it holds the poisoned event: retried alone."""

    def __init__(self) -> None:
        self.groups: list[int] = []

    def record_events(self, deliveries: Sequence[tuple[Any, bytes]]) -> list[bool]:
        self.groups.append(len(deliveries))
        if any(e.id == "bad" for e, _ in deliveries):
            raise RuntimeError("cannot store")
        return [True] * len(deliveries)


def test_one_bad_delivery_fails_alone() -> None:
    ledger = Poisoned()
    writer = GroupWriter(ledger)  # type: ignore[arg-type]

    async def flood() -> list[Any]:
        names = ["x", "bad", "y", "z"]
        return await asyncio.gather(*(writer.store(*_event(n)) for n in names), return_exceptions=True)

    results = asyncio.run(flood())
    assert results[0] is True and isinstance(results[1], RuntimeError) and results[2:] == [True, True]
    assert ledger.groups[0] == 4  # one group first, then one at a time


def test_the_event_window_is_a_setting_with_a_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().webhook.event_window_days == 3
    monkeypatch.setenv("DOCCHECK_WEBHOOK_EVENT_WINDOW_DAYS", "7")
    assert Settings().webhook.event_window_days == 7
    monkeypatch.setenv("DOCCHECK_WEBHOOK_EVENT_WINDOW_DAYS", "1")
    with pytest.raises(ValidationError, match="event_window_days"):
        Settings()
