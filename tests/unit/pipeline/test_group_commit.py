"""``GroupCommit``'s gathering rule: a group commits at its target, at once when nothing
else can join it, and otherwise after at most ``max_wait`` (issue 10)."""

from __future__ import annotations

import asyncio
import gc
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


def test_a_cancelled_waiter_leaves_no_unread_error_when_the_writer_closed_meanwhile() -> None:
    """A batch cancelled while its group commit waits, its writer closed before the commit
    runs: the commit's error ("cannot schedule new futures after shutdown") has no reader,
    and must not be logged at exit as "Future exception was never retrieved"."""
    unread: list[dict[str, Any]] = []
    writer = LedgerWriter()
    state = {"idle": False}
    commit = GroupCommit(None, writer, committed([]), target=100, max_wait=30.0, idle=lambda: state["idle"])  # type: ignore[arg-type]

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: unread.append(context))
        waiter = asyncio.create_task(commit.record(1))
        await asyncio.sleep(0.01)  # the group waits for more items (max_wait 30 s)
        waiter.cancel()
        writer.close()
        state["idle"] = True
        commit.nudge()  # nothing else will join: the commit runs, on a closed writer
        for _ in range(20):
            await asyncio.sleep(0)
        del waiter

    asyncio.run(main())
    gc.collect()  # an unread future's error is logged when the future is collected
    assert not [c for c in unread if "never retrieved" in str(c.get("message"))], unread


def test_a_cancelled_waiter_leaves_no_unread_error_when_the_loop_stops_as_the_write_fails() -> None:
    """The same, with the loop stopped in the turn the write on the closed writer fails (Ctrl-C, or
    its owner stopping it): an error set on the group's future of a waiter that is gone, read later
    in a callback, was never read: "Future exception was never retrieved ... cannot schedule new
    futures after shutdown" when the future was collected. A waiter that leaves gives up its
    future at once, and the group sets an outcome only on a future still awaited."""
    unread: list[dict[str, Any]] = []

    class StoppedAsItFails(LedgerWriter):
        async def call(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            asyncio.get_running_loop().stop()  # the loop ends with the turn that runs this write
            return await super().call(fn, *args, **kwargs)

    writer = StoppedAsItFails()
    state = {"idle": False}
    commit = GroupCommit(None, writer, committed([]), target=100, max_wait=30.0, idle=lambda: state["idle"])  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda _loop, context: unread.append(context))
    try:
        waiter = loop.create_task(commit.record(1))
        loop.run_until_complete(asyncio.sleep(0.01))  # the group waits for more items (max_wait 30 s)
        waiter.cancel()
        writer.close()
        state["idle"] = True
        commit.nudge()  # nothing else will join: the commit runs, on a closed writer
        loop.run_forever()  # until the write stops it
    finally:
        loop.close()
    assert waiter.cancelled()
    del waiter, commit
    gc.collect()
    assert not [c for c in unread if "never retrieved" in str(c.get("message"))], unread
