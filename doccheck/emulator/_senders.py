"""Webhook senders: the emulator delivering events as other senders of the same interface would.

Why: the interface shows the event's fields but not the value set of ``product``, the shape
of ``error``, how deliveries are retried or how a rotation signs; real senders differ on
each (issue 39). A sender profile (selected like the answer profiles of
:mod:`doccheck.emulator._variants`, per account) turns one finished product into the
deliveries such a sender makes: which bodies, which event ids, when (service time), and
how each is signed. The service's truth (the check, its cost) never changes with it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass
from typing import Any

from doccheck.webhooks import compute_signature

DAY = 86400.0
#: Sender profiles and what each does (``doccheck emulator --help`` lists them with the others).
SENDERS: dict[str, str] = {
    "webhook-late-failure": "each product's first attempt fails and the retry completes; the first attempt's "
    "check.failed (its own event id) is delivered after the check.completed",
    "webhook-product-spellings": "event product values 'AI', 'ai_detection', 'similarity_check', 'SIMILARITY'",
    "webhook-unknown-product": "event product 'originality', a value nobody told the receiver about",
    "webhook-error-shapes": "a failed product's error as a plain string, {code, message} or an RFC 9457 problem",
    "webhook-thin": "events whose check summary is its id alone",
    "webhook-several-v1": "two v1 entries (a retired secret's and the current one's), either order, "
    "a space after each comma",
    "webhook-millisecond-t": "t in milliseconds (a receiver keeping the rules refuses it: polling takes over)",
    "webhook-redeliveries": "every event delivered three times with fresh ids, and again three days later",
}
_SPELLINGS = {"ai": ("AI", "ai_detection"), "similarity": ("similarity_check", "SIMILARITY")}


@dataclass(frozen=True)
class Planned:
    """One delivery a sender makes: its body, event id, delay (service seconds) and signing style."""

    event_type: str
    body: bytes
    event_id: str
    delay: float = 0.0
    style: str = "default"


def _body(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


def plan_deliveries(profile: str, payload: dict[str, Any], serial: int) -> list[Planned]:
    """The deliveries ``profile`` makes for one event ``payload`` (``serial``: how many events
    the emulator made before, so that spellings and shapes vary deterministically)."""
    kind = str(payload["type"])
    if profile == "webhook-late-failure" and kind == "check.completed":
        failed = {**payload, "id": str(uuid.uuid4()), "type": "check.failed",
                  "error": {"code": "processing_failed", "message": "the first attempt failed; retried"}}  # fmt: skip
        return [Planned(kind, _body(payload), str(payload["id"])),
                Planned("check.failed", _body(failed), str(failed["id"]), delay=30.0)]  # fmt: skip
    if profile == "webhook-product-spellings":
        payload = {**payload, "product": _SPELLINGS[str(payload["product"])][serial % 2]}
    elif profile == "webhook-unknown-product":
        payload = {**payload, "product": "originality"}
    elif profile == "webhook-error-shapes" and kind == "check.failed":
        payload = {**payload, "error": error_shape(payload.get("error") or {}, serial)}
    elif profile == "webhook-thin":
        payload = {**payload, "check": {"id": payload["check"]["id"]}}
    elif profile == "webhook-redeliveries":
        copies = [{**payload, "id": str(uuid.uuid4())} for _ in range(2)]
        first = Planned(kind, _body(payload), str(payload["id"]))
        again = Planned(kind, first.body, first.event_id, delay=3 * DAY)  # the same event, days later
        return [first, *(Planned(kind, _body(c), str(c["id"]), delay=1.0) for c in copies), again]
    style = {"webhook-several-v1": "several-v1", "webhook-millisecond-t": "millisecond-t"}.get(profile, "default")
    return [Planned(kind, _body(payload), str(payload["id"]), style=style)]


def error_shape(error: dict[str, Any], serial: int) -> Any:
    """The emulator's ``{code, message}`` as another sender shapes it (three shapes, in turn)."""
    code, message = error.get("code"), error.get("message")
    shape = serial % 3
    if shape == 0:
        return message  # a plain string
    if shape == 1:
        return {"code": code, "message": message}
    return {"type": f"https://errors.example/{code}", "title": "Product failed", "status": 500, "detail": message}


def sign(style: str, secret: str, now: float, body: bytes, serial: int) -> str:
    """The ``Service-Signature`` value a sender of ``style`` sends (the emulator's own by default)."""
    t = int(now)
    if style == "millisecond-t":
        t = int(now * 1000)
        return f"t={t},v1={compute_signature(secret, t, body)}"
    good = compute_signature(secret, t, body)
    if style == "several-v1":
        retired = hmac.new(hashlib.sha256(secret.encode()).digest(), f"{t}.".encode() + body, "sha256").hexdigest()
        first, second = (retired, good) if serial % 2 == 0 else (good, retired)
        return f"t={t}, v1={first}, v1={second}"
    return f"t={t},v1={good}"
