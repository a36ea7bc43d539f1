"""Webhook management and signed deliveries to a real local HTTP receiver.

The signature is verified here with ``hmac``/``hashlib`` directly, independently of
``doccheck.webhooks._signing``, so a bug shared by the emulator and the library cannot hide.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.factories import ESSAY, TS
from tests.factories import assert_service_error as assert_error
from tests.fixtures.emulator import EmulatorHandle, ReceivedRequest, WebhookSink, start_emulator, stop_emulator

pytestmark = pytest.mark.integration


def verify_by_hand(req: ReceivedRequest, secret: str, now: float | None = None) -> int:
    """The receiver rules of the interface, written out: returns ``t``."""
    header = req.headers["Service-Signature"]
    m = re.fullmatch(r"t=(\d+),v1=([0-9a-f]{64})", header)
    assert m, header
    t, v1 = int(m.group(1)), m.group(2)
    expected = hmac.new(secret.encode(), f"{t}.".encode() + req.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, v1), "signature mismatch"
    assert abs((now or time.time()) - t) <= 300, "stale"
    return t


def test_webhook_management(emulator: EmulatorHandle, emulator_account: str, webhook_sink: WebhookSink) -> None:
    with emulator.client(emulator_account) as c:
        assert_error(c.get("/webhook"), 404, "not_found")
        assert_error(c.post("/webhook/rotate"), 404, "not_found")
        assert_error(c.delete("/webhook"), 404, "not_found")
        created = c.put("/webhook", json={"url": webhook_sink.url})
        assert created.status_code == 200
        body = created.json()
        assert body["object"] == "webhook" and body["url"] == webhook_sink.url
        assert body["secret"].startswith("whsec_") and body["message"]
        got = c.get("/webhook").json()
        assert "secret" not in got and got["url"] == webhook_sink.url and got["last_delivery"] is None
        moved = c.put("/webhook", json={"url": webhook_sink.url + "/v2"}).json()
        assert "secret" not in moved and moved["url"].endswith("/v2")
        rotated = c.post("/webhook/rotate")
        assert rotated.status_code == 200 and rotated.json()["secret"] not in (None, body["secret"])
        assert "secret" not in c.get("/webhook").json()
        assert c.delete("/webhook").status_code == 204
        assert_error(c.get("/webhook"), 404, "not_found")


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1/x", "http://93.184.216.34/hook", "https://", "not a url", "", 42, None, "https://u:p@127.0.0.1/"],
)
def test_invalid_webhook_urls(emulator: EmulatorHandle, emulator_account: str, url: object) -> None:
    with emulator.client(emulator_account) as c:
        assert_error(c.put("/webhook", json={"url": url}), 422, "invalid_webhook_url")


def test_webhook_body_errors(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        assert_error(
            c.put("/webhook", content=b"{", headers={"content-type": "application/json"}), 422, "invalid_input"
        )
        assert_error(c.put("/webhook", json=["x"]), 422, "invalid_input")


@pytest.fixture(scope="module")
def public_emulator() -> Iterator[EmulatorHandle]:
    """An emulator WITHOUT --allow-private-webhooks, with fault flags given on the command line."""
    handle = start_emulator("--product-failure-rate", "1", "--processing-seconds", "0", "--latency-ms", "1",
                            "--rate-limit-per-s", "1000", "--webhook-drop-rate", "0.5", api_key="sk_test_public_only")  # fmt: skip
    try:
        yield handle
    finally:
        stop_emulator(handle)
    assert handle.process.returncode == 0 and "Traceback" not in handle.log()


def test_cli_prints_base_url_and_keys_and_applies_fault_flags(public_emulator: EmulatorHandle) -> None:
    log = public_emulator.log()
    assert f"{public_emulator.base_url}" in log and "sk_test_public_only" in log
    faults = httpx.get(f"{public_emulator.root_url}/_emulator/faults", trust_env=False).json()
    assert faults == {"latency_ms": 1, "error_rate": 0.0, "rate_limit_per_s": 1000, "webhook_drop_rate": 0.5,
                      "product_failure_rate": 1.0, "processing_seconds": 0.0}  # fmt: skip


def test_private_targets_are_refused_without_the_flag(public_emulator: EmulatorHandle) -> None:
    handle = public_emulator
    with handle.client() as c:
        for url in ["https://127.0.0.1/h", "https://localhost/h", "https://10.1.2.3/h", "https://[::1]/h",
                    "https://169.254.169.254/latest", "https://192.168.0.1/", "http://127.0.0.1:9/h",
                    "https://[::ffff:127.0.0.1]/h", "https://0.0.0.0/"]:  # fmt: skip
            err = assert_error(c.put("/webhook", json={"url": url}), 422, "invalid_webhook_url")
            assert "private" in err["message"] or "https" in err["message"], (url, err)
        # a public HTTPS address is accepted (never called: no check is created here)
        assert c.put("/webhook", json={"url": "https://93.184.216.34/hook"}).status_code == 200
        assert_error(
            c.post("/checks", json={"text": "a b c", "webhook_url": "https://127.0.0.1/h"}), 422, "invalid_webhook_url"
        )
        assert handle.account_state("sk_test_public_only")["checks"] == 0


def test_deliveries_are_signed_one_per_product(
    emulator: EmulatorHandle, emulator_account: str, webhook_sink: WebhookSink
) -> None:
    with emulator.client(emulator_account) as c:
        secret = c.put("/webhook", json={"url": webhook_sink.url}).json()["secret"]
        check = c.post("/checks", json={"text": ESSAY, "products": ["ai", "similarity"],
                                        "metadata": {"row": 3}}).json()  # fmt: skip
        emulator.advance(1.5)
        got = webhook_sink.wait_for(2)
        last = c.get("/webhook").json()["last_delivery"]
    assert {r.json()["product"] for r in got} == {"ai", "similarity"}
    ids = set()
    for req in got:
        assert req.method == "POST" and req.path == "/hook"
        verify_by_hand(req, secret, now=time.time() + emulator.state_offset())
        event = req.json()
        assert req.headers["Service-Event"] == event["type"] == "check.completed"
        uuid.UUID(req.headers["Service-Delivery"])
        assert event["error"] is None and TS.match(event["created_at"])
        assert event["check"]["id"] == check["id"] and event["check"]["metadata"] == {"row": 3}
        assert set(event["check"]) >= {"id", "status", "name", "products", "metadata", "ai", "similarity"}
        ids.add(event["id"])
    assert len(ids) == 2
    assert last["status"] == "succeeded" and last["http_status"] == 200 and TS.match(last["at"])
    mine = [d for d in emulator.state()["deliveries"] if d["check_id"] == check["id"]]
    assert sorted(d["product"] for d in mine) == ["ai", "similarity"]
    assert all(d["status"] == "succeeded" and d["attempts"] == 1 and d["url"] == webhook_sink.url for d in mine)


def test_failed_product_event_and_per_check_override(
    emulator_faults: EmulatorHandle, emulator_account: str, webhook_sink: WebhookSink
) -> None:
    emulator = emulator_faults
    with emulator.client(emulator_account) as c:
        secret = c.put("/webhook", json={"url": "http://127.0.0.1:9/account-endpoint"}).json()["secret"]
        override = webhook_sink.url.replace("/hook", "/override")
        emulator.set_faults(product_failure_rate=1.0)
        check = c.post("/checks", json={"text": ESSAY, "webhook_url": override}).json()
        emulator.advance(1.5)
        (req,) = webhook_sink.wait_for(1)
    assert req.path == "/override"
    verify_by_hand(req, secret, now=time.time() + emulator.state_offset())
    event = req.json()
    assert event["type"] == "check.failed" == req.headers["Service-Event"]
    assert event["product"] == "ai" and event["error"]["code"] == "processing_failed"
    assert event["check"]["status"] == "failed" and event["check"]["id"] == check["id"]


def test_retries_with_backoff_rotation_redirects_and_drops(isolated_emulator: EmulatorHandle) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    sink = WebhookSink()
    try:
        with emu.client(key) as c:
            old = c.put("/webhook", json={"url": sink.url}).json()["secret"]
            sink.statuses.put(500)
            sink.statuses.put(302)
            check = c.post("/checks", json={"text": ESSAY}).json()
            emu.advance(1.5)
            sink.wait_for(1)  # 500
            d = next(x for x in emu.state()["deliveries"] if x["check_id"] == check["id"])
            assert d["status"] == "pending" and d["attempts"] == 1 and d["last_http_status"] == 500
            assert c.get("/webhook").json()["last_delivery"]["status"] == "failed"
            emu.advance(9)  # backoff is 10 s: nothing yet
            assert len(sink.requests) == 1
            emu.advance(1)
            sink.wait_for(2)  # 302: a redirect is a failure and is not followed
            assert all(r.path == "/hook" for r in sink.requests)
            new = c.post("/webhook/rotate").json()["secret"]
            emu.set_faults(webhook_drop_rate=1.0)
            emu.advance(20)  # attempt 3 is dropped by the fault
            d = next(x for x in emu.state()["deliveries"] if x["check_id"] == check["id"])
            assert d["attempts"] == 3 and d["status"] == "pending" and len(sink.requests) == 2
            emu.reset_faults()
            emu.advance(40)  # attempt 4 succeeds, signed with the NEW secret
            reqs = sink.wait_for(3)
            offset = emu.state_offset()
            verify_by_hand(reqs[2], new, now=time.time() + offset)
            with pytest.raises(AssertionError):
                verify_by_hand(reqs[2], old, now=time.time() + offset)
            assert len({r.headers["Service-Delivery"] for r in reqs}) == 1
            assert len({r.json()["id"] for r in reqs}) == 1
            d = next(x for x in emu.state()["deliveries"] if x["check_id"] == check["id"])
            assert d["status"] == "succeeded" and d["attempts"] == 4
            assert c.get("/webhook").json()["last_delivery"]["status"] == "succeeded"
    finally:
        sink.close()


def test_delivery_gives_up_after_the_retries(isolated_emulator: EmulatorHandle) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    with emu.client(key) as c:
        c.put("/webhook", json={"url": "http://127.0.0.1:9/closed-port"})
        check = c.post("/checks", json={"text": ESSAY}).json()
        emu.advance(1.5)
        for backoff in (10, 20, 40, 80, 160):
            emu.advance(backoff)
        d = next(x for x in emu.state()["deliveries"] if x["check_id"] == check["id"])
        assert d["status"] == "failed" and d["attempts"] == 6 and d["last_http_status"] is None
        assert c.get(f"/checks/{check['id']}").json()["status"] == "completed"  # polling still works
