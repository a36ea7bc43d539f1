"""The emulator's virtual clock: real time plus an offset that tests can advance.

Every time-based rule of the service (processing delay, 600 s upload URLs, 24 h upload
deletion, idempotency retention, delivery backoff, the ``t`` of signatures) reads this
clock, so a test can jump ten minutes or a day ahead instead of waiting for it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


class VirtualClock:
    """Wall-clock time shifted by a non-negative offset that only ever grows."""

    def __init__(self) -> None:
        self._offset = 0.0

    def now(self) -> float:
        """Current service time in Unix seconds."""
        return time.time() + self._offset

    @property
    def offset(self) -> float:
        """Seconds the clock is ahead of real time."""
        return self._offset

    def advance(self, seconds: float) -> float:
        """Move the clock forward (never back) and return the new time."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self._offset += seconds
        return self.now()


def iso(ts: float) -> str:
    """ISO 8601 UTC with milliseconds and ``Z``, the service's timestamp format."""
    dt = datetime.fromtimestamp(ts, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
