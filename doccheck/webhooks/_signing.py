"""HMAC-SHA256 signing of webhook deliveries: the one pure helper the emulator shares.

The service signs ``f"{t}.{raw_body}"`` with the account's secret and sends
``Service-Signature: t=<unix_seconds>,v1=<hex>``. Verification (which must compare in
constant time and check the age) lives in :mod:`doccheck.webhooks._verify`.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "Service-Signature"
EVENT_HEADER = "Service-Event"
DELIVERY_HEADER = "Service-Delivery"


def compute_signature(secret: str, timestamp: int, body: bytes) -> str:
    """Hex HMAC-SHA256 of ``<timestamp>.<body>`` under ``secret``."""
    message = str(int(timestamp)).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    """The value of the ``Service-Signature`` header for ``body`` signed at ``timestamp``."""
    return f"t={int(timestamp)},v1={compute_signature(secret, timestamp, body)}"
