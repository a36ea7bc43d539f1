"""The real receiver subprocess over real sockets, fed by hand and by the real emulator.

Deliveries from the emulator are signed with its virtual clock, so these tests use the
private ``webhook_emulator`` and advance it by seconds only (see tests/fixtures/receiver.py).
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from doccheck.client import DocCheckClient
from doccheck.webhooks import sign
from tests.fixtures.events import event_body
from tests.fixtures.receiver import ReceiverHandle, scope_for

pytestmark = pytest.mark.integration

TEXT = (
    "Rivers carve valleys over thousands of years, and the sediment they carry builds deltas "
    "where they meet the sea. Farmers have relied on those deltas for as long as there were farms."
)


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10, trust_env=False) as c:
        yield c


@pytest.fixture
def manual_secret(receiver: ReceiverHandle) -> str:
    secret = f"whsec_manual_{uuid.uuid4().hex}"
    receiver.store_secret(secret, scope=f"manual-{uuid.uuid4().hex[:8]}")
    return secret


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll a condition with a short deadline (the work is already done; this only waits
    for another process's write to become visible)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def test_healthz(receiver: ReceiverHandle, http: httpx.Client) -> None:
    r = http.get(f"{receiver.url}/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_signed_delivery_stored_exactly_once(receiver: ReceiverHandle, http: httpx.Client, manual_secret: str) -> None:
    event_id = f"evt_{uuid.uuid4().hex}"
    body = event_body(event_id)
    headers = {"Service-Signature": sign(body, manual_secret), "Content-Type": "application/json"}
    first = http.post(receiver.webhook_url, content=body, headers=headers)
    second = http.post(receiver.webhook_url, content=body, headers=headers)
    assert (first.status_code, first.json()["duplicate"]) == (200, False)
    assert (second.status_code, second.json()["duplicate"]) == (200, True)
    stored = [e for e in receiver.ledger.events() if e.event_id == event_id]
    assert len(stored) == 1 and stored[0].payload == json.loads(body)


def test_refusals_over_real_sockets(receiver: ReceiverHandle, http: httpx.Client, manual_secret: str) -> None:
    event_id = f"evt_{uuid.uuid4().hex}"
    body = event_body(event_id)
    cases = {
        "missing": (None, 400),
        "malformed": ("t=now,v1=zz", 400),
        "wrong secret": (sign(body, "whsec_not_the_one"), 401),
        "stale": (sign(body, manual_secret, timestamp=int(time.time()) - 600), 401),
    }
    for name, (header, status) in cases.items():
        headers = {"Service-Signature": header} if header else {}
        r = http.post(receiver.webhook_url, content=body, headers=headers)
        assert r.status_code == status, name
        assert manual_secret not in r.text and event_id not in r.text, name
    big = b"{" + b" " * (2 * 1024 * 1024) + b"}"
    r = http.post(receiver.webhook_url, content=big, headers={"Service-Signature": sign(big, manual_secret)})
    assert r.status_code == 413
    assert not [e for e in receiver.ledger.events() if e.event_id == event_id]


def test_oversize_refused_before_body_is_read(receiver: ReceiverHandle) -> None:
    """A client that announces 100 MB gets its 413 without sending a single body byte."""
    with socket.create_connection(("127.0.0.1", int(receiver.url.rsplit(":", 1)[1])), timeout=5) as sock:
        sock.sendall(
            b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 104857600\r\nService-Signature: t=1,v1=" + b"0" * 64 + b"\r\n\r\n"
        )
        head = sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 413")


def test_emulator_deliveries_land_exactly_once_despite_redelivery(webhook_emulator, receiver: ReceiverHandle) -> None:
    """First attempts fail (the receiver has no secret for this account yet → 401), the
    emulator redelivers with backoff; after the secret is stored, each event is recorded
    once, and a replay of the same signed delivery is a duplicate."""
    api_key = webhook_emulator.new_account()
    with DocCheckClient(webhook_emulator.base_url, api_key) as client:
        hook = client.put_webhook(receiver.webhook_url)
        assert hook.secret is not None
        check = client.create_check(text=TEXT, products=["ai", "similarity"], idempotency_key=uuid.uuid4().hex)
    webhook_emulator.advance(2)  # processing done, first deliveries attempted (refused)
    mine = [d for d in webhook_emulator.state()["deliveries"] if d["check_id"] == check.id]
    assert len(mine) == 2 and all(d["attempts"] == 1 and d["status"] == "pending" for d in mine), mine
    receiver.store_secret(hook.secret, scope=scope_for(api_key))
    webhook_emulator.advance(11)  # first retry is due after 10 s of service time
    mine = [d for d in webhook_emulator.state()["deliveries"] if d["check_id"] == check.id]
    assert all(d["status"] == "succeeded" and d["attempts"] == 2 for d in mine), mine
    events = wait_until(lambda: list(receiver.ledger.events(check_id=check.id)) if len(
        receiver.ledger.events(check_id=check.id)) == 2 else None)  # fmt: skip
    assert sorted(e.product for e in events) == ["ai", "similarity"]
    assert {e.type for e in events} == {"check.completed"}
    assert {e.event_id for e in events} == {d["event_id"] for d in mine}
    webhook_emulator.advance(30)  # nothing further is redelivered
    assert len(receiver.ledger.events(check_id=check.id)) == 2


def test_concurrent_deliveries_while_the_pipeline_applies(receiver: ReceiverHandle, manual_secret: str) -> None:
    """Two processes on one SQLite file: 80 deliveries (20 of them redeliveries) in
    parallel while this process applies events; every event stored and applied once, no 5xx."""
    import concurrent.futures

    prefix = uuid.uuid4().hex[:8]
    bodies = [event_body(f"evt_{prefix}_{i}", f"chk_{prefix}_{i}") for i in range(60)]
    bodies += bodies[:20]

    shared = httpx.Client(timeout=30, trust_env=False)  # thread-safe; one pool for all threads

    def deliver(body: bytes) -> int:
        return shared.post(
            receiver.webhook_url, content=body, headers={"Service-Signature": sign(body, manual_secret)}
        ).status_code

    with shared, concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(deliver, b) for b in bodies]
        applied = 0
        while not all(f.done() for f in futures):
            applied += receiver.ledger.apply_pending_events()
            time.sleep(0.02)
        statuses = [f.result() for f in futures]
    applied += receiver.ledger.apply_pending_events()
    assert statuses == [200] * 80
    mine = [e for e in receiver.ledger.events() if e.event_id.startswith(f"evt_{prefix}_")]
    assert len(mine) == 60 and all(e.applied for e in mine)
    assert applied >= 60
