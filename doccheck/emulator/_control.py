"""The test-only control surface under ``/_emulator`` (DESIGN.md), outside ``/api/v1``.

It can create accounts, read the state, advance the clock and change faults at runtime.
It never takes part in the emulated interface and is hidden from the OpenAPI document.
"""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from doccheck.emulator._api_errors import ApiError, invalid_input
from doccheck.emulator._bearer_auth import emulator_of
from doccheck.emulator._clock import iso
from doccheck.emulator._inputs import read_json_object

router = APIRouter(prefix="/_emulator", include_in_schema=False)


@router.get("/health")
async def health(request: Request) -> Response:
    emu = emulator_of(request)
    return JSONResponse({"status": "ok", "now": iso(emu.clock.now()), "clock_offset_s": emu.clock.offset})


@router.get("/state")
async def state(request: Request) -> Response:
    emu = emulator_of(request)
    return JSONResponse({
        "now": iso(emu.clock.now()),
        "accounts": {key: account.state() for key, account in emu.store.accounts.items()},
        "deliveries": [d.state() for d in emu.dispatcher.deliveries],
        "faults": emu.faults.settings.model_dump(),
    })  # fmt: skip


@router.post("/clock/advance")
async def advance(request: Request) -> Response:
    emu = emulator_of(request)
    body = await read_json_object(request, limit=4096)
    seconds = body.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= 10 * 365 * 86400:
        raise invalid_input("'seconds' must be a non-negative number")
    await emu.advance(float(seconds))
    return JSONResponse({"now": iso(emu.clock.now()), "clock_offset_s": emu.clock.offset})


def _faults_update(request: Request, body: dict[str, Any]) -> Response:
    emu = emulator_of(request)
    try:
        settings = emu.faults.update(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise invalid_input(f"fault {where!r}: {first['msg']}") from None
    return JSONResponse(settings.model_dump())


@router.get("/faults")
async def get_faults(request: Request) -> Response:
    return JSONResponse(emulator_of(request).faults.settings.model_dump())


@router.post("/faults")
async def set_faults(request: Request) -> Response:
    """Partial update; ``{"seed": N}`` also re-seeds the dice (replays the same fault sequence)."""
    body = await read_json_object(request, limit=4096)
    if "seed" in body:
        seed = body.pop("seed")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise invalid_input("'seed' must be an integer")
        emulator_of(request).faults.rng.seed(seed)
    return _faults_update(request, body)


@router.post("/faults/reset")
async def reset_faults(request: Request) -> Response:
    return JSONResponse(emulator_of(request).faults.reset().model_dump())


@router.post("/profile")
async def set_profile(request: Request) -> Response:
    """``{"name": NAME}`` for the whole emulator, or ``{"name": NAME, "api_key": KEY}`` for one
    account (tests share one emulator): answer as that variant (``doccheck.emulator._variants``)."""
    from doccheck.emulator._variants import check_name

    state = request.app.state.variants
    body = await read_json_object(request, limit=4096)
    name, key = body.get("name"), body.get("api_key")
    try:
        check_name(name if isinstance(name, str) else "")
    except ValueError as exc:
        raise invalid_input(str(exc)) from None
    if isinstance(key, str) and key:
        state.by_account[key] = name
    else:
        state.default = name
    return JSONResponse({"default": state.default, "accounts": len(state.by_account)})


@router.get("/profile")
async def get_profile(request: Request) -> Response:
    """The profile in force, and how many creates and uploads each account had refused as an
    unsupported type (``no-odt``): a test counts the refusals a run paid."""
    state = request.app.state.variants
    return JSONResponse({"default": state.default, "refused": dict(state.refused)})


@router.post("/accounts", status_code=201)
async def create_account(request: Request) -> Response:
    emu = emulator_of(request)
    body = await read_json_object(request, limit=4096)
    key = body.get("api_key") or f"sk_test_{secrets.token_hex(12)}"
    balance = body.get("balance_cents", emu.config.balance_cents)
    if not isinstance(key, str) or not key.strip() or len(key) > 200 or any(c.isspace() for c in key):
        raise invalid_input("'api_key' must be a non-empty string without spaces")
    if isinstance(balance, bool) or not isinstance(balance, int) or balance < 0:
        raise invalid_input("'balance_cents' must be a non-negative integer")
    if key in emu.store.accounts:
        raise ApiError(409, "account_exists", "an account with this api_key exists")
    emu.store.add_account(key, balance)
    return JSONResponse({"api_key": key, "balance_cents": balance}, status_code=201)
