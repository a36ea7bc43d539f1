"""The fleet's rate limit (issue 12) against a real Prefect server: the global concurrency
limit is created with the rate as its slot decay, two pacers (two workers) sharing it get
no more than the rate together, and a shard told to use a limit that does not exist fails
loudly (``strict=True``) instead of running unpaced."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from prefect_doccheck.tasks import FleetRateLimit, ensure_rate_limit, fleet_pacer

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]


def test_two_pacers_share_one_rate(prefect_server: Any) -> None:
    limit = FleetRateLimit(name=f"doccheck-test-{uuid.uuid4().hex[:6]}", per_second=20, chunk=5)

    async def main() -> tuple[float, Any]:
        from prefect import get_client

        await ensure_rate_limit(limit)
        await ensure_rate_limit(limit)  # idempotent: a second parent run finds it
        async with get_client() as client:
            stored = await client.read_global_concurrency_limit_by_name(limit.name)
        pacers = [fleet_pacer(limit), fleet_pacer(limit)]
        assert all(p is not None for p in pacers)
        started = time.monotonic()
        await asyncio.gather(*(p.permit() for p in pacers for _ in range(40) if p is not None))
        return time.monotonic() - started, stored

    elapsed, stored = asyncio.run(main())
    assert stored.limit == 20 and stored.slot_decay_per_second == 20
    # 80 requests at 20/s with a burst of 20: at least (80 - 20) / 20 = 3 s
    assert elapsed >= 2.5, elapsed
    assert elapsed < 20, elapsed


def test_a_missing_limit_fails_loudly(prefect_server: Any) -> None:
    from prefect.concurrency.asyncio import ConcurrencySlotAcquisitionError

    pacer = fleet_pacer(FleetRateLimit(name=f"doccheck-absent-{uuid.uuid4().hex[:6]}", per_second=5, chunk=2))
    assert pacer is not None
    with pytest.raises(ConcurrencySlotAcquisitionError):
        asyncio.run(pacer.permit())


def test_no_rate_means_no_pacing() -> None:
    assert fleet_pacer(FleetRateLimit(per_second=None)) is None
