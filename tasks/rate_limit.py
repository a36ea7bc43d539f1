"""One rate limit for the whole fleet of workers: a Prefect global concurrency limit.

Why Prefect's: the workers of a pool may run on many machines and already share one
Prefect server; a global concurrency limit with ``slot_decay_per_second`` is Prefect's
own rate limit (``prefect.concurrency.asyncio.rate_limit``), visible and adjustable in
the UI (Concurrency → Global), with no other shared service to run. Slots are taken a
chunk at a time (:class:`doccheck.pipeline.pacing.ChunkPacer`), not per request: one
API round trip per request would double the cost of each request.

Settings (flow parameters override them):

- ``DOCCHECK_RATE_LIMIT_NAME``: the limit's name (default ``doccheck-service``);
- ``DOCCHECK_RATE_LIMIT_PER_SECOND``: requests per second for the whole fleet; unset
  means no fleet-wide pacing (each client still honours 429 and ``Retry-After``);
- ``DOCCHECK_RATE_LIMIT_CHUNK``: slots taken per acquisition (default 10).

``strict=True``: a shard that was told to respect a limit and finds none fails loudly
rather than running unpaced.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from prefect import get_client
from prefect.concurrency.asyncio import rate_limit

from doccheck.pipeline.pacing import ChunkPacer

__all__ = ["DEFAULT_CHUNK", "DEFAULT_NAME", "FleetRateLimit", "ensure_rate_limit", "fleet_pacer", "rate_limit_from_env"]

DEFAULT_NAME = "doccheck-service"
DEFAULT_CHUNK = 10


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
    """The limit from the arguments, else from ``DOCCHECK_RATE_LIMIT_*``."""
    env_rate = os.environ.get("DOCCHECK_RATE_LIMIT_PER_SECOND", "").strip()
    env_chunk = os.environ.get("DOCCHECK_RATE_LIMIT_CHUNK", "").strip()
    try:
        rate = per_second if per_second is not None else (float(env_rate) if env_rate else None)
        size = chunk if chunk is not None else (int(env_chunk) if env_chunk else DEFAULT_CHUNK)
    except ValueError:
        raise ValueError(
            "DOCCHECK_RATE_LIMIT_PER_SECOND must be a number and DOCCHECK_RATE_LIMIT_CHUNK an integer"
        ) from None
    if rate is not None and rate < 0:
        raise ValueError(f"the fleet rate limit must be positive, got {rate}")
    if size < 1:
        raise ValueError(f"the rate-limit chunk must be at least 1, got {size}")
    limit_name = (name or os.environ.get("DOCCHECK_RATE_LIMIT_NAME", "") or DEFAULT_NAME).strip()
    return FleetRateLimit(name=limit_name, per_second=rate, chunk=size)


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
