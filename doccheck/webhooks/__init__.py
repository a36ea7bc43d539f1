"""Webhook signatures and deliveries: sign, verify, parse, and the receiver's secret file.

:mod:`.signing` is the HMAC header (pure: the emulator shares it to sign what it sends);
:mod:`.verify` applies the interface's four receiver rules and parses the event;
:mod:`.secret_file` keeps signing secrets in an owner-only file. This ``__init__`` imports
nothing, so that importing :mod:`.signing` pulls in nothing else.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    """``doccheck.webhooks.verify(...)`` and friends, as release 0.1 had them (the module is now
    :mod:`.verify`); imported on first use so this package's import stays empty."""
    import importlib
    import warnings

    verify_module = importlib.import_module("doccheck.webhooks.verify")
    if name == "verify":  # the submodule: `from doccheck.webhooks import verify` means the module now
        return verify_module
    if name in verify_module.__all__:
        warnings.warn(f"doccheck.webhooks.{name} moved to doccheck.webhooks.verify.{name}", DeprecationWarning, 2)
        return getattr(verify_module, name)
    raise AttributeError(f"module 'doccheck.webhooks' has no attribute {name!r}")
