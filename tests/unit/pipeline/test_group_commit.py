"""``GroupCommit``'s gathering rule: a group commits at its target, at once when nothing
else can join it, and otherwise after at most ``max_wait`` (issue 10)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from doccheck.pipeline.sending._ledger_writer import GroupCommit, LedgerWriter


def committed(groups: list[list[int]]) -> Any:
    def many(_ledger: Any, items: list[int]) -> list[int]:
        groups.append(list(items))
        return [i * 10 for i in items]

    return many


def gather(commit: GroupCommit[int, int], items: list[int]) -> tuple[list[int | None], float]:
    async def main() -> tuple[list[int | None], float]:
        started = time.monotonic()
        results = await asyncio.gather(*(commit.record(i) for i in items))
        return list(results), time.monotonic() - started

    try:
        return asyncio.run(main())
    finally:
        commit.writer.close()


def test_a_group_commits_when_it_reaches_its_target_without_waiting() -> None:
    groups: list[list[int]] = []
    commit = GroupCommit(None, LedgerWriter(), committed(groups), target=3, max_wait=30.0, idle=lambda: False)  # type: ignore[arg-type]
    results, took = gather(commit, [1, 2, 3])
    assert results == [10, 20, 30] and groups == [[1, 2, 3]]
    assert took < 10  # far from the 30 s bound


def test_a_group_commits_at_once_when_nothing_else_can_join() -> None:
    groups: list[list[int]] = []
    commit = GroupCommit(None, LedgerWriter(), committed(groups), target=100, max_wait=30.0, idle=lambda: True)  # type: ignore[arg-type]
    results, took = gather(commit, [1, 2])
    assert results == [10, 20] and groups == [[1, 2]]
    assert took < 10


def test_a_small_group_waits_at_most_max_wait() -> None:
    groups: list[list[int]] = []
    commit = GroupCommit(None, LedgerWriter(), committed(groups), target=100, max_wait=0.05, idle=lambda: False)  # type: ignore[arg-type]
    results, took = gather(commit, [7])
    assert results == [70] and groups == [[7]]
    assert 0.04 <= took < 10


def test_a_nudge_commits_a_waiting_group_once_nothing_else_can_join() -> None:
    groups: list[list[int]] = []
    state = {"idle": False}
    commit = GroupCommit(None, LedgerWriter(), committed(groups), target=100, max_wait=30.0, idle=lambda: state["idle"])  # type: ignore[arg-type]

    async def main() -> int | None:
        waiting = asyncio.create_task(commit.record(4))
        for _ in range(10):
            await asyncio.sleep(0)
        assert not waiting.done()
        state["idle"] = True
        commit.nudge()
        return await asyncio.wait_for(waiting, 10)

    try:
        assert asyncio.run(main()) == 40
    finally:
        commit.writer.close()
    assert groups == [[4]]
