"""Injected faults (latency, 5xx, rate limiting, dropped deliveries, product failures).

One seeded :class:`random.Random` decides every random fault, so a run started with the
same ``--seed`` and the same sequence of requests fails in the same places. Settings are
a pydantic model so that ``POST /_emulator/faults`` validates partial updates strictly.
"""

from __future__ import annotations

import random
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from doccheck.emulator._api_errors import ApiError


class FaultSettings(BaseModel):
    """The knobs of ``POST /_emulator/faults`` (``rate_limit_per_s`` 0 means unlimited)."""

    model_config = ConfigDict(extra="forbid")

    latency_ms: int = Field(0, ge=0, le=60_000)
    error_rate: float = Field(0.0, ge=0.0, le=1.0)
    rate_limit_per_s: int = Field(0, ge=0, le=1_000_000)
    webhook_drop_rate: float = Field(0.0, ge=0.0, le=1.0)
    product_failure_rate: float = Field(0.0, ge=0.0, le=1.0)
    processing_seconds: float = Field(1.0, ge=0.0, le=86_400.0)


class Faults:
    """Current settings, the ones to reset to, and the seeded dice."""

    def __init__(self, initial: FaultSettings, seed: int | None) -> None:
        self.initial = initial
        self.settings = initial.model_copy()
        self.rng = random.Random(seed)

    def update(self, partial: dict[str, Any]) -> FaultSettings:
        """Apply a partial update; omitted keys keep their value. Raises pydantic.ValidationError."""
        self.settings = FaultSettings.model_validate({**self.settings.model_dump(), **partial})
        return self.settings

    def reset(self) -> FaultSettings:
        self.settings = self.initial.model_copy()
        return self.settings

    def roll(self, probability: float) -> bool:
        """True with ``probability`` (never consumes randomness when the probability is 0)."""
        if probability <= 0.0:
            return False
        return self.rng.random() < probability

    def maybe_server_error(self) -> None:
        """Raise a 500 or 503 with ``error_rate``: called before a request does any work."""
        if self.roll(self.settings.error_rate):
            if self.rng.random() < 0.5:
                raise ApiError(500, "internal_error", "injected fault: internal error")
            raise ApiError(503, "service_unavailable", "injected fault: service unavailable")

    def check_rate_limit(self, recent: Any) -> None:
        """Sliding one-second window per account, in real (not virtual) time."""
        limit = self.settings.rate_limit_per_s
        if not limit:
            return
        now = time.monotonic()
        while recent and now - recent[0] >= 1.0:
            recent.popleft()
        if len(recent) >= limit:
            retry_after = max(1, int(1.0 - (now - recent[0]) + 0.999))
            raise ApiError(
                429,
                "rate_limited",
                f"rate limit of {limit} requests per second exceeded; retry after {retry_after} s",
                headers={"Retry-After": str(retry_after)},
            )
        recent.append(now)
