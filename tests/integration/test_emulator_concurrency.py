"""Races over real sockets: one key, one upload, many concurrent requests."""

from __future__ import annotations

import asyncio
import random

import httpx
import pytest

from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration

TEXT = "A long and winding road leads to the old house at the end of the valley. " * 40


async def _burst(emulator: EmulatorHandle, key: str, n: int, **request: object) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {key}", **request.pop("headers", {})}  # type: ignore[dict-item]
    async with httpx.AsyncClient(base_url=emulator.base_url, headers=headers, trust_env=False, timeout=30) as c:
        return await asyncio.gather(*(c.post("/checks", **request) for _ in range(n)))  # type: ignore[arg-type]


def test_concurrent_requests_with_one_idempotency_key_create_one_check(
    emulator: EmulatorHandle, emulator_account: str
) -> None:
    responses = asyncio.run(
        _burst(
            emulator,
            emulator_account,
            12,
            json={"text": TEXT, "products": ["ai", "similarity"]},
            headers={"Idempotency-Key": "same-row"},
        )  # fmt: skip
    )
    assert {r.status_code for r in responses} == {201}
    assert len({r.json()["id"] for r in responses}) == 1
    state = emulator.account_state(emulator_account)
    assert state["checks"] == 1 and state["charged_cents"] == responses[0].json()["cost"]["total_cents"]


def test_concurrent_checks_from_one_upload_consume_it_once(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        up = c.post("/uploads", json={"filename": "house.txt"}).json()
    httpx.put(up["upload_url"], content=TEXT.encode(), headers={"Content-Type": "text/plain"}, trust_env=False)
    responses = asyncio.run(_burst(emulator, emulator_account, 8, json={"upload_id": up["upload_id"]}))
    codes = sorted(r.status_code for r in responses)
    assert codes.count(201) == 1 and set(codes) == {201, 409}
    assert all(r.json()["error"]["code"] == "upload_consumed" for r in responses if r.status_code == 409)
    assert emulator.account_state(emulator_account)["checks"] == 1


def test_copies_sent_at_once_find_each_other_whatever_the_threads_timing(emulator: EmulatorHandle) -> None:
    """Ten pairs of identical essays, all twenty at once: the copy stored second always names the
    first as a source (it was analysed off the event loop at the same time as its twin: compared
    there, neither saw the other unless one thread happened to finish first)."""
    key = emulator.new_account()
    vocabulary = [f"w{n}" for n in range(5_000)]
    texts = [" ".join(random.Random(i).choices(vocabulary, k=400)) for i in range(10)]  # nothing shared by chance

    async def send() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=emulator.base_url, headers={"Authorization": f"Bearer {key}"},
                                     trust_env=False, timeout=30) as c:  # fmt: skip
            return await asyncio.gather(*(c.post("/checks", json={"text": t, "products": ["similarity"]})
                                          for t in texts + texts))  # fmt: skip

    created = [r.json() for r in asyncio.run(send())]
    assert all("id" in c for c in created), created
    emulator.advance(1.5)
    with emulator.client(key) as c:
        sources = {x["id"]: c.get(f"/checks/{x['id']}").json()["similarity"]["sources"] for x in created}
    for i in range(len(texts)):
        a, b = created[i]["id"], created[i + len(texts)]["id"]
        named = [s["source_id"] for s in sources[a] + sources[b] if s["kind"] == "submission"]
        assert named in ([a], [b]), (i, sources[a], sources[b])
