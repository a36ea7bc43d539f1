"""``ConnectionLanes``, the async client's service transport, against the real emulator:
one connection per lane, a lane busy until its response is closed, the pool timeout, and a
lane given back when its request fails or is cancelled."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from doccheck.client import AsyncDocCheckClient, ConnectionLanes, TextDocument
from tests.factories import NO_RETRY, TEXT

pytestmark = pytest.mark.integration


def connections(lanes: ConnectionLanes) -> int:
    """Connections open across the lanes (each lane is a one-connection httpx pool)."""
    return sum(len(lane._pool.connections) for lane in lanes._lanes)


def test_a_burst_of_requests_uses_one_connection_per_lane(emulator, emulator_account: str) -> None:
    """40 checks started in the same event-loop turn on 4 lanes: all succeed, on 4 connections."""

    async def main() -> tuple[int, int]:
        lanes = ConnectionLanes(4)
        async with AsyncDocCheckClient(emulator.base_url, emulator_account, transport=lanes, retry=NO_RETRY) as client:
            subs = await asyncio.gather(*(
                client.submit(TextDocument(f"{TEXT} {i}"), products=["ai"], idempotency_key=f"lanes-{uuid.uuid4()}")
                for i in range(40)
            ))  # fmt: skip
            return len({s.check.id for s in subs}), connections(lanes)

    distinct, opened = asyncio.run(main())
    assert distinct == 40
    assert opened == 4


def test_a_lane_is_busy_until_its_response_is_closed(emulator) -> None:
    """With one lane, a second request waits for the first response's close; past the
    request's pool timeout it fails with ``httpx.PoolTimeout``, as httpx's own pool does."""

    async def main() -> None:
        health = f"{emulator.root_url}/_emulator/health"
        async with httpx.AsyncClient(transport=ConnectionLanes(1)) as http:
            async with http.stream("GET", health) as held:
                assert held.status_code == 200
                with pytest.raises(httpx.PoolTimeout, match="1 lanes busy"):
                    await http.get(health, timeout=httpx.Timeout(5.0, pool=0.05))
                waiting = asyncio.create_task(http.get(health, timeout=httpx.Timeout(5.0, pool=5.0)))
                await asyncio.sleep(0)
                assert not waiting.done()
            assert (await waiting).status_code == 200  # the lane came back with the close

    asyncio.run(main())


def test_a_failed_or_cancelled_request_gives_its_lane_back(emulator_faults) -> None:
    """A connection refused, and a request cancelled while the service is slow, each leave
    the single lane free for the next request."""

    async def main() -> None:
        health = f"{emulator_faults.root_url}/_emulator/health"
        slow = f"{emulator_faults.base_url}/checks"
        timeout = httpx.Timeout(5.0, pool=0.5)
        async with httpx.AsyncClient(transport=ConnectionLanes(1), timeout=timeout) as http:
            with pytest.raises(httpx.ConnectError):
                await http.get("http://127.0.0.1:9/nobody-listens")
            assert (await http.get(health)).status_code == 200
            emulator_faults.set_faults(latency_ms=5_000)
            request = asyncio.create_task(http.get(slow))
            for _ in range(50):  # until the request holds the lane (the server is slow)
                await asyncio.sleep(0.01)
                if request.done() or http._transport._free.empty():  # type: ignore[attr-defined]
                    break
            request.cancel()
            with pytest.raises(asyncio.CancelledError):
                await request
            emulator_faults.reset_faults()
            assert (await http.get(health)).status_code == 200

    asyncio.run(main())


def test_lanes_refuse_a_count_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ConnectionLanes(0)
