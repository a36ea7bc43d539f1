"""Verify and parse webhook deliveries (the four receiver rules of the interface).

1. Verify the RAW body, before any JSON parsing (a re-serialised body would not match).
2. HMAC-SHA256 of ``<t>.<raw body>`` with the signing secret, compared with ``v1`` in
   constant time (``hmac.compare_digest``), so timing does not reveal a correct prefix.
3. A missing or malformed header (``t`` not ASCII digits, ``v1`` not 64 hex) is refused
   (-> HTTP 400), distinct from a well-formed but wrong signature (-> 401).
4. A stale ``t`` (|now - t| > tolerance, default 300 s, future included) is refused (-> 401),
   which bounds replays of a captured delivery.

Several secrets may be given during a rotation: a delivery signed with any of them passes.
Header format decisions (the interface is silent): parts are ``key=value`` separated by
commas, whitespace around parts is ignored; exactly one ``t``; one or more ``v1`` (a sender
mid-rotation may sign with both secrets); other keys (``v0``) are ignored; hex is accepted
in either case (the interface says "64 hex characters"), compared lower-cased. No message
ever contains a secret, the body, or the expected signature.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Sequence

from pydantic import SecretStr
from pydantic import ValidationError as PydanticValidationError

from doccheck.client import Event
from doccheck.errors import (
    EventParseError,
    InvalidSignature,
    JsonRejected,
    MalformedSignature,
    MissingSignature,
    StaleSignature,
)
from doccheck.guards import bounded_json
from doccheck.webhooks import _signing as signing

SIGNATURE_HEADER = signing.SIGNATURE_HEADER
DEFAULT_TOLERANCE = 300
MAX_HEADER_LENGTH = 2048
#: Bounds of the event JSON parse (an event is a few hundred bytes, nested 4 levels at most).
MAX_EVENT_BYTES = 16 * 1024 * 1024
MAX_EVENT_DEPTH = 32
_T_RE = re.compile(r"[0-9]{1,15}")
_V1_RE = re.compile(r"[0-9a-fA-F]{64}")


def _secret_value(secret: str | SecretStr) -> str:
    return secret.get_secret_value() if isinstance(secret, SecretStr) else secret


def parse_header(header: str | None) -> tuple[int, list[str]]:
    """``(t, [v1, ...])`` from a ``Service-Signature`` value, or Missing/MalformedSignature."""
    if header is None or not header.strip():
        raise MissingSignature("missing Service-Signature header")
    if len(header) > MAX_HEADER_LENGTH:
        raise MalformedSignature("Service-Signature header is too long")
    timestamps: list[str] = []
    signatures: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            raise MalformedSignature("Service-Signature header part is not key=value")
        key, value = key.strip(), value.strip()
        if key == "t":
            timestamps.append(value)
        elif key == "v1":
            signatures.append(value)
    if len(timestamps) != 1:
        raise MalformedSignature("Service-Signature header must carry exactly one t")
    if not _T_RE.fullmatch(timestamps[0]):
        raise MalformedSignature("Service-Signature t is not a unix timestamp in digits")
    if not signatures:
        raise MalformedSignature("Service-Signature header has no v1 signature")
    for sig in signatures:
        if not _V1_RE.fullmatch(sig):
            raise MalformedSignature("Service-Signature v1 is not 64 hex characters")
    return int(timestamps[0]), [s.lower() for s in signatures]


def verify(
    raw_body: bytes,
    header: str | None,
    secrets: Sequence[str | SecretStr],
    tolerance: int = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> None:
    """Return None if ``raw_body`` was signed by one of ``secrets`` within ``tolerance``
    seconds of ``now`` (default: the current time); raise a :class:`SignatureError` otherwise.

    The signature is checked before the age, so ``StaleSignature`` means "authentic but old"
    (a useful diagnostic: the receiver's clock or a delayed redelivery), never "forged".
    """
    if not isinstance(raw_body, (bytes, bytearray, memoryview)):
        raise TypeError("raw_body must be the raw bytes of the request body")
    keys = [_secret_value(s) for s in secrets if _secret_value(s)]
    if not keys:
        raise ValueError("no webhook signing secret configured")
    timestamp, candidates = parse_header(header)
    message = str(timestamp).encode("ascii") + b"." + bytes(raw_body)
    matched = False
    for key in keys:
        expected = hmac.new(key.encode("utf-8"), message, hashlib.sha256).hexdigest()
        for candidate in candidates:
            # No early exit: every pair is compared so timing does not tell which matched.
            matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        raise InvalidSignature("signature does not match any configured secret")
    current = time.time() if now is None else float(now)
    if abs(current - timestamp) > tolerance:
        raise StaleSignature(f"signature timestamp is {int(current - timestamp)} s from now (tolerance {tolerance} s)")


def sign(raw_body: bytes, secret: str | SecretStr, timestamp: int | None = None) -> str:
    """The ``Service-Signature`` header value for ``raw_body`` (for tests and local tools)."""
    ts = int(time.time()) if timestamp is None else int(timestamp)
    return signing.signature_header(_secret_value(secret), ts, bytes(raw_body))


def parse_event(raw_body: bytes) -> Event:
    """The typed event of a (verified) body; :class:`EventParseError` without echoing it."""
    try:  # bounded: a correctly signed body is still untrusted input (depth, NaN, huge numbers)
        data = bounded_json.loads(raw_body, max_bytes=MAX_EVENT_BYTES, max_depth=MAX_EVENT_DEPTH)
    except JsonRejected as exc:
        raise EventParseError(f"event body is not acceptable JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EventParseError("event body is not a JSON object")
    try:
        return Event.model_validate(data)
    except PydanticValidationError as exc:
        fields = sorted({".".join(str(p) for p in err["loc"]) or "<root>" for err in exc.errors()})
        raise EventParseError(f"event payload is invalid: bad or missing field(s) {', '.join(fields)}") from None


__all__ = ["SIGNATURE_HEADER", "parse_event", "parse_header", "sign", "verify"]
