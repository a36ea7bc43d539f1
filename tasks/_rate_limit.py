"""One rate limit for the whole fleet of workers: a Prefect global concurrency limit.

Why Prefect's: the workers of a pool may run on many machines and already share one
Prefect server; a global concurrency limit with ``slot_decay_per_second`` is Prefect's
own rate limit (``prefect.concurrency.asyncio.rate_limit``), visible and adjustable in
the UI (Concurrency → Global), with no other shared service to run. Slots are taken a
chunk at a time (:class:`doccheck.pipeline.ChunkPacer`), not per request: one
API round trip per request would double the cost of each request.

Settings: the ``rate_limit`` group of :class:`doccheck.config.Settings`
(``DOCCHECK_RATE_LIMIT_NAME``, ``_PER_SECOND``, ``_CHUNK``); flow parameters override them.

``strict=True``: a shard that was told to respect a limit and finds none fails loudly
rather than running unpaced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prefect import get_client
from prefect.concurrency.asyncio import rate_limit

from doccheck.config import RateLimitSettings, load_settings
from doccheck.pipeline import ChunkPacer

__all__ = ["DEFAULT_CHUNK", "DEFAULT_NAME", "FleetRateLimit", "ensure_rate_limit", "fleet_pacer", "rate_limit_from_env"]

DEFAULT_NAME: str = RateLimitSettings.model_fields["name"].default
DEFAULT_CHUNK: int = RateLimitSettings.model_fields["chunk"].default


@dataclass(frozen=True)
class FleetRateLimit:
    """The fleet's limit: ``per_second`` requests, acquired ``chunk`` slots at a time."""

    name: str = DEFAULT_NAME
    per_second: float | None = None
    chunk: int = DEFAULT_CHUNK

    @property
    def enabled(self) -> bool:
        return self.per_second is not None and self.per_second > 0

    @property
    def capacity(self) -> int:
        """The limit's slot count: one second of requests, and at least one chunk (a chunk
        larger than the limit could never be acquired)."""
        return max(self.chunk, math.ceil(self.per_second or 0))


def rate_limit_from_env(
    name: str | None = None, per_second: float | None = None, chunk: int | None = None
) -> FleetRateLimit:
    """The limit from the arguments, else from the ``rate_limit`` settings (one validation:
    a bad value names its variable or argument)."""
    limit = load_settings(rate_limit_name=name or None, rate_limit_per_second=per_second, rate_limit_chunk=chunk)
    return FleetRateLimit(
        name=limit.rate_limit.name.strip(), per_second=limit.rate_limit.per_second, chunk=limit.rate_limit.chunk
    )


async def ensure_rate_limit(limit: FleetRateLimit) -> None:
    """Create the global concurrency limit, or set its rate, so every worker finds it
    (``slot_decay_per_second`` = the rate: each slot frees itself after 1/rate s)."""
    if not limit.enabled:
        return
    async with get_client() as client:
        await client.upsert_global_concurrency_limit_by_name(
            limit.name, limit=limit.capacity, slot_decay_per_second=float(limit.per_second or 0)
        )


def fleet_pacer(limit: FleetRateLimit) -> ChunkPacer | None:
    """A pacer taking ``limit.chunk`` slots per acquisition from the fleet's limit (None
    when no rate is set)."""
    if not limit.enabled:
        return None

    async def acquire(n: int) -> None:
        await rate_limit(limit.name, occupy=n, strict=True)

    return ChunkPacer(acquire, chunk=limit.chunk)
