"""Webhook signatures and deliveries: sign, verify, parse, and the receiver's secret file.

:mod:`.signing` is the HMAC header (pure: the emulator shares it to sign what it sends);
:mod:`.verify` applies the interface's four receiver rules and parses the event;
:mod:`.secret_file` keeps signing secrets in an owner-only file; :mod:`.secret_sources` says
which source of secrets a receiver uses. This ``__init__`` imports nothing, so that
importing :mod:`.signing` pulls in nothing else. Their errors are in :mod:`doccheck.errors`.
"""

from __future__ import annotations

#: The package's modules, each a public surface of its own.
_PUBLIC_MODULES = ("secret_file", "secret_sources", "signing", "verify")

__all__ = ["secret_file", "secret_sources", "signing", "verify"]


def __getattr__(name: str) -> object:
    if name in _PUBLIC_MODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
