"""Bearer-key authentication and per-account rate limiting of ``/api/v1`` requests."""

from __future__ import annotations

from fastapi import Request

from doccheck.emulator._api_errors import ApiError
from doccheck.emulator._runtime import Emulator
from doccheck.emulator._store import Account


def emulator_of(request: Request) -> Emulator:
    """The :class:`Emulator` this app serves."""
    emu: Emulator = request.app.state.emulator
    return emu


def authenticate(request: Request) -> Account:
    """The caller's account, or ``401 unauthorized``; then the rate limit (``429``)."""
    emu = emulator_of(request)
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "unauthorized", "missing or malformed Authorization header (expected 'Bearer <API_KEY>')")
    account = emu.store.accounts.get(key.strip())
    if account is None:
        raise ApiError(401, "unauthorized", "unknown API key")
    emu.faults.check_rate_limit(account.recent_requests)
    return account
