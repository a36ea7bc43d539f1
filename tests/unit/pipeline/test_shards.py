"""Shards (issue 12): the split is stable, balanced and total; shard settings fail clearly;
the fleet pacer takes its slots in chunks and the transport spends one per request."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import Counter

import httpx
import pytest

from doccheck.pipeline import ChunkPacer, PacedTransport
from doccheck.pipeline.planning._plan import idempotency_key
from doccheck.pipeline.planning._shards import (
    ShardConfigError,
    check_shared_ledger,
    in_shard,
    shard_of,
    validate_shard,
)

SIX, THOUSAND = [5, 5, 5], [343, 333, 859]  # blake2b-64 of the key, mod N: fixed forever
KEYS = [idempotency_key("term-1", f"{i:064x}", ("ai", "similarity")) for i in range(12_000)]


def test_every_document_is_in_exactly_one_shard() -> None:
    for shards in (1, 2, 3, 6, 7):
        for key in KEYS[:2000]:
            owners = [k for k in range(shards) if in_shard(key, k, shards)]
            assert owners == [shard_of(key, shards)]


def test_split_is_balanced() -> None:
    for shards in (2, 6, 16):
        counts = Counter(shard_of(k, shards) for k in KEYS)
        expected = len(KEYS) / shards
        assert set(counts) == set(range(shards))
        # a uniform split: every shard within five standard deviations of its share
        assert max(abs(c - expected) for c in counts.values()) < 5 * expected**0.5, counts


def test_split_is_stable_across_processes() -> None:
    """Python salts ``hash()`` per process; the split must not depend on it."""
    code = (
        "from doccheck.pipeline.planning._shards import shard_of; import sys; "
        "print(','.join(str(shard_of(k, 6)) for k in sys.argv[1:]))"
    )
    sample = KEYS[:50]
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"  # another salt than this process's
    other = subprocess.run(
        [sys.executable, "-c", code, *sample], capture_output=True, text=True, check=True,
        env={"PYTHONHASHSEED": seed},
    ).stdout.strip()  # fmt: skip
    assert other == ",".join(str(shard_of(k, 6)) for k in sample)


def test_known_values_never_change() -> None:
    """A rerun after an upgrade must split as before (documents already claimed by shard k)."""
    assert [shard_of(k, 6) for k in ("a", "b", "doccheck:xyz")] == SIX
    assert [shard_of(k, 1000) for k in ("a", "b", "doccheck:xyz")] == THOUSAND


@pytest.mark.parametrize(("shard", "shards", "fragment"), [(0, 0, "shards must be"), (6, 6, "shard must be"),
                                                          (-1, 3, "shard must be"), (0, 5000, "shards must be")])  # fmt: skip
def test_impossible_shard_settings_are_refused(shard: int, shards: int, fragment: str) -> None:
    with pytest.raises(ShardConfigError, match=fragment):
        validate_shard(shard, shards)


def test_sqlite_with_several_shards_names_the_fix() -> None:
    check_shared_ledger("sqlite:///doccheck.db", 1)  # one shard: today's single process, fine
    check_shared_ledger("postgresql+psycopg://u:pw@db/doccheck", 4)
    with pytest.raises(ShardConfigError) as info:
        check_shared_ledger("sqlite:////tmp/x.db", 4)
    message = str(info.value)
    assert "PostgreSQL" in message and "DOCCHECK_DATABASE_URL=postgresql" in message and "shards=1" in message


def test_ledger_url_password_is_not_in_the_error() -> None:
    with pytest.raises(ShardConfigError) as info:
        check_shared_ledger("not a url at all ://", 3)
    assert "not a url" not in str(info.value)


def test_pacer_takes_slots_a_chunk_at_a_time() -> None:
    calls: list[int] = []

    async def acquire(n: int) -> None:
        calls.append(n)
        await asyncio.sleep(0)

    async def main() -> ChunkPacer:
        pacer = ChunkPacer(acquire, chunk=10)
        await asyncio.gather(*(pacer.permit() for _ in range(25)))
        return pacer

    pacer = asyncio.run(main())
    assert calls == [10, 10, 10]
    assert pacer.used == 25 and pacer.acquired == 30


def test_pacer_refuses_an_empty_chunk() -> None:
    with pytest.raises(ValueError, match="chunk"):
        ChunkPacer(lambda n: asyncio.sleep(0), chunk=0)


def test_transport_waits_for_a_permit_before_each_request() -> None:
    """Every request, the client's retries included, passes the pacer: what the service counts."""
    order: list[str] = []

    async def acquire(n: int) -> None:
        order.append(f"acquire {n}")

    def handler(request: httpx.Request) -> httpx.Response:
        order.append(f"send {request.url.path}")
        return httpx.Response(200, json={})

    async def main() -> ChunkPacer:
        pacer = ChunkPacer(acquire, chunk=2)
        transport = PacedTransport(pacer, httpx.MockTransport(handler))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:1") as client:
            for i in range(3):
                await client.get(f"/r{i}")
        return pacer

    pacer = asyncio.run(main())
    assert order == ["acquire 2", "send /r0", "send /r1", "acquire 2", "send /r2"]
    assert pacer.used == 3
