"""The receiver's Prefect events: shape (accepted by Prefect's own Event model), HTTP call,
Cloud auth header, failures swallowed; and the receiver app emits only after storing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from pydantic import SecretStr

from doccheck.client import Event
from doccheck.receiver._prefect_events import PrefectEventEmitter, event_name, prefect_event

SERVICE_EVENT = {
    "id": "evt_123",
    "type": "check.completed",
    "created_at": "2026-11-22T10:00:00Z",
    "product": "ai",
    "check": {"id": "chk_9", "status": "processing", "name": "essay.docx", "products": ["ai", "similarity"]},
    "error": None,
}


def test_event_shape_is_a_valid_prefect_event() -> None:
    from prefect.events.schemas.events import Event as PrefectEvent

    body = prefect_event(Event.model_validate(SERVICE_EVENT), "hist-101")
    parsed = PrefectEvent.model_validate(body)
    assert parsed.event == "doccheck.check.completed"
    assert parsed.resource.id == "doccheck.check.chk_9"
    assert parsed.resource["doccheck.campaign"] == "hist-101"
    assert parsed.related[0].role == "campaign" and parsed.related[0].id == "doccheck.campaign.hist-101"
    # stable id per service event: a redelivery cannot make a second Prefect event
    assert prefect_event(Event.model_validate(SERVICE_EVENT))["id"] == body["id"]
    no_campaign = prefect_event(Event.model_validate({**SERVICE_EVENT, "type": "check.failed"}))
    assert no_campaign["event"] == "doccheck.check.failed" and no_campaign["related"] == []
    assert event_name("check.completed") == "doccheck.check.completed"


def test_a_products_other_spelling_is_named_as_the_product() -> None:
    body = prefect_event(Event.model_validate({**SERVICE_EVENT, "product": "AI_Detection"}))
    assert body["resource"]["doccheck.product"] == "ai"  # automations match one name (issue 39)
    assert body["payload"]["product"] == "AI_Detection"  # as the service sent it


def test_emitter_posts_with_cloud_key_and_never_raises() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204 if len(seen) == 1 else 500)

    emitter = PrefectEventEmitter(
        "http://prefect.test/api/", SecretStr("pnu_cloud"), campaign_of=lambda cid: "c1",
        transport=httpx.MockTransport(handler),
    )  # fmt: skip
    event = Event.model_validate(SERVICE_EVENT)

    async def go() -> tuple[bool, bool]:
        try:
            return await emitter.emit(event), await emitter.emit(event)
        finally:
            await emitter.aclose()

    assert asyncio.run(go()) == (True, False)
    assert str(seen[0].url) == "http://prefect.test/api/events"
    assert seen[0].headers["authorization"] == "Bearer pnu_cloud"
    (sent,) = json.loads(seen[0].content)
    assert sent["resource"]["doccheck.campaign"] == "c1"
    assert emitter.sent == 1 and emitter.failed == 1

    def boom(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("down")

    down = PrefectEventEmitter("http://prefect.test/api", transport=httpx.MockTransport(boom))
    assert asyncio.run(down.emit(event)) is False


def test_receiver_app_calls_on_stored_after_answer_for_new_events_only(tmp_path: Any) -> None:
    from starlette.testclient import TestClient

    from doccheck.ledger import Ledger
    from doccheck.receiver._delivery_app import create_app
    from doccheck.webhooks import SIGNATURE_HEADER, sign

    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    emitted: list[str] = []

    async def on_stored(event: Event) -> None:
        emitted.append(event.id)

    app = create_app(ledger, lambda: ["whsec_unit"], on_stored=on_stored)
    raw = json.dumps(SERVICE_EVENT).encode()
    with TestClient(app) as http:
        for _ in range(2):  # the second is a duplicate
            answer = http.post("/webhook", content=raw, headers={SIGNATURE_HEADER: sign(raw, "whsec_unit")})
            assert answer.status_code == 200
        bad = http.post("/webhook", content=raw, headers={SIGNATURE_HEADER: sign(raw, "other")})
        assert bad.status_code == 401
    assert emitted == ["evt_123"]
    ledger.close()


def test_secret_block_read_over_rest_and_cached() -> None:
    import pytest

    from doccheck.receiver._prefect_events import read_secret_block, secret_block_provider

    calls: list[httpx.Request] = []
    value = {"v": "whsec_one, whsec_two"}

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if request.url.path.endswith("/name/missing"):
            return httpx.Response(404, json={"detail": "Block document not found"})
        return httpx.Response(200, json={"name": "hook", "data": {"value": value["v"]}})

    transport = httpx.MockTransport(handler)
    got = read_secret_block("http://p/api", "hook", SecretStr("pnu_x"), transport=transport)
    assert [s.get_secret_value() for s in got] == ["whsec_one", "whsec_two"]
    assert calls[0].url.path == "/api/block_types/slug/secret/block_documents/name/hook"
    assert calls[0].url.params["include_secrets"] == "true"
    assert calls[0].headers["authorization"] == "Bearer pnu_x"
    with pytest.raises(LookupError, match="missing") as info:
        read_secret_block("http://p/api", "missing", transport=transport)
    assert "whsec" not in str(info.value)

    import doccheck.receiver._prefect_events as pe

    original = pe.read_secret_block
    pe.read_secret_block = lambda url, name, key=None: original(url, name, key, transport=transport)  # type: ignore[assignment]
    try:
        provider = secret_block_provider("http://p/api", "hook", ttl=3600)
        before = len(calls)
        assert len(provider()) == 2 and len(provider()) == 2
        assert len(calls) == before + 1  # cached within the ttl
    finally:
        pe.read_secret_block = original  # type: ignore[assignment]


def test_webhook_secret_block_read_over_rest_when_no_secret_block() -> None:
    from datetime import UTC, datetime, timedelta

    import pytest

    from doccheck.receiver._prefect_events import read_secret_block

    until = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    blocks = {
        "rotating": {"current": "whsec_new", "previous": "whsec_old", "previous_valid_until": until},
        "rotated": {
            "current": "whsec_new",
            "previous": "whsec_old",
            "previous_valid_until": "2020-01-01T00:00:00+00:00",
        },
    }
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        slug, name = request.url.path.split("/")[-4], request.url.path.rsplit("/", 1)[-1]
        if slug == "doccheck-webhook-secret" and name in blocks:
            return httpx.Response(200, json={"name": name, "data": blocks[name]})
        return httpx.Response(404, json={"detail": "Block document not found"})

    transport = httpx.MockTransport(handler)
    got = read_secret_block("http://p/api", "rotating", transport=transport)
    assert [s.get_secret_value() for s in got] == ["whsec_new", "whsec_old"]
    assert paths == ["/api/block_types/slug/secret/block_documents/name/rotating",
                     "/api/block_types/slug/doccheck-webhook-secret/block_documents/name/rotating"]  # fmt: skip
    assert [s.get_secret_value() for s in read_secret_block("http://p/api", "rotated", transport=transport)] == [
        "whsec_new"
    ]
    with pytest.raises(LookupError, match="no Prefect Secret or DocCheckWebhookSecret block named 'nope'") as info:
        read_secret_block("http://p/api", "nope", transport=transport)
    assert "whsec" not in str(info.value)
