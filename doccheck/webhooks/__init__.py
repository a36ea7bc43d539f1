"""Webhook signatures and deliveries: sign, verify, parse, and the receiver's secret file.

The HMAC header (``compute_signature``: pure, the emulator shares it to sign what it sends);
the interface's four receiver rules and the event's parsing (``verify``, ``parse_event``);
signing secrets in an owner-only file (``SecretFile``) and the one order of their sources
(``signing_secrets``). Their errors are in :mod:`doccheck.errors`.

This ``__init__`` imports nothing of its own: each name is imported on first use, so that
the emulator, which signs, loads the signing helper and nothing else (no client models, no
secret file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from doccheck.webhooks._secret_file import (
        DEFAULT_PREVIOUS_WINDOW_S,
        SecretFile,
        check_private,
        file_secrets_provider,
    )
    from doccheck.webhooks._secret_sources import SecretsProvider, signing_secrets
    from doccheck.webhooks._signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, compute_signature
    from doccheck.webhooks._verify import parse_event, parse_header, sign, verify

__all__ = [
    "DEFAULT_PREVIOUS_WINDOW_S",
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "SIGNATURE_HEADER",
    "SecretFile",
    "SecretsProvider",
    "check_private",
    "compute_signature",
    "file_secrets_provider",
    "parse_event",
    "parse_header",
    "sign",
    "signing_secrets",
    "verify",
]

#: Name → the private module that defines it, imported by ``__getattr__`` on first use.
_LAZY = {
    "DEFAULT_PREVIOUS_WINDOW_S": "_secret_file",
    "DELIVERY_HEADER": "_signing",
    "EVENT_HEADER": "_signing",
    "SIGNATURE_HEADER": "_signing",
    "SecretFile": "_secret_file",
    "SecretsProvider": "_secret_sources",
    "check_private": "_secret_file",
    "compute_signature": "_signing",
    "file_secrets_provider": "_secret_file",
    "parse_event": "_verify",
    "parse_header": "_verify",
    "sign": "_verify",
    "signing_secrets": "_secret_sources",
    "verify": "_verify",
}


__getattr__ = _lazy_getattr(__name__, _LAZY)
