"""Authentication: the bearer header from a SecretStr, and scrubbing the key out of text.

Why its own module: the API key must reach exactly one place (the service's
``Authorization`` header) and nowhere else (reprs, error messages, the storage origin).
"""

from __future__ import annotations

from collections.abc import Generator

import httpx
from pydantic import SecretStr


class BearerAuth(httpx.Auth):
    """Adds ``Authorization: Bearer`` from a SecretStr; its repr never shows the key."""

    def __init__(self, key: SecretStr) -> None:
        self._key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._key.get_secret_value()}"
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(key=**********)"


def scrub(text: str, secret: SecretStr | None) -> str:
    """``text`` with every occurrence of the secret replaced by asterisks."""
    if secret is not None:
        raw = secret.get_secret_value()
        if raw and raw in text:
            text = text.replace(raw, "**********")
    return text
