"""A heap of jobs due at a service (virtual-clock) time.

Processing, upload deletion and delivery retries are all "do X at time T" jobs. Keeping
them in one heap lets the background loop and ``POST /_emulator/clock/advance`` share one
rule: pop and run everything whose time has come.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(order=True)
class Job:
    due: float
    seq: int
    run: Callable[[], Any] = field(compare=False)
    label: str = field(compare=False, default="")


class Scheduler:
    """Min-heap of :class:`Job` ordered by due time, then insertion order."""

    def __init__(self) -> None:
        self._heap: list[Job] = []
        self._seq = itertools.count()

    def at(self, due: float, run: Callable[[], Any], label: str = "") -> None:
        """Run ``run()`` once the clock reaches ``due``."""
        heapq.heappush(self._heap, Job(due, next(self._seq), run, label))

    def pop_due(self, now: float) -> list[Job]:
        """Remove and return every job due at ``now``, earliest first."""
        due: list[Job] = []
        while self._heap and self._heap[0].due <= now:
            due.append(heapq.heappop(self._heap))
        return due

    def __len__(self) -> int:
        return len(self._heap)
