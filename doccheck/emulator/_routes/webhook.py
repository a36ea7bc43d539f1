"""Webhook management: ``GET/PUT/DELETE /webhook`` and ``POST /webhook/rotate``.

The secret is shown only when the endpoint is created and when it is rotated.
"""

from __future__ import annotations

import secrets

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from doccheck.emulator._api_errors import ApiError
from doccheck.emulator._bearer_auth import authenticate, emulator_of
from doccheck.emulator._inputs import read_json_object
from doccheck.emulator._openapi_docs import ERROR_RESPONSES, PUT_WEBHOOK_BODY
from doccheck.emulator._store import Account, Webhook
from doccheck.emulator._webhook_urls import vet_url_or_422

router = APIRouter()
SECRET_NOTICE = "Store the signing secret now: it is not shown again (rotate to get a new one)."


def _new_secret() -> str:
    return "whsec_" + secrets.token_hex(24)


def _require(account: Account) -> Webhook:
    if account.webhook is None:
        raise ApiError(404, "not_found", "no webhook endpoint is configured for this account")
    return account.webhook


@router.get("/webhook", responses=ERROR_RESPONSES)
async def get_webhook(request: Request) -> Response:
    """The endpoint and its last delivery; never the secret."""
    webhook = _require(authenticate(request))
    return JSONResponse({"object": "webhook", "url": webhook.url, "last_delivery": webhook.last_delivery})


@router.put("/webhook", openapi_extra=PUT_WEBHOOK_BODY, responses=ERROR_RESPONSES)
async def put_webhook(request: Request) -> Response:
    """Create (secret returned) or move (secret kept and not shown) the account endpoint."""
    emu = emulator_of(request)
    account = authenticate(request)
    body = await read_json_object(request, limit=16 * 1024)
    url = await vet_url_or_422(
        body.get("url"), allow_private=emu.config.allow_private_webhooks, offline=emu.config.offline
    )
    if account.webhook is None:
        account.webhook = Webhook(url=url, secret=_new_secret(), created_at=emu.clock.now())
        return JSONResponse(
            {"object": "webhook", "url": url, "secret": account.webhook.secret, "message": SECRET_NOTICE}
        )
    account.webhook.url = url
    return JSONResponse(
        {"object": "webhook", "url": url, "message": "Endpoint moved; the signing secret is unchanged."}
    )


@router.post("/webhook/rotate", responses=ERROR_RESPONSES)
async def rotate_webhook(request: Request) -> Response:
    """Issue a new signing secret; deliveries from now on (retries too) use it."""
    webhook = _require(authenticate(request))
    webhook.secret = _new_secret()
    return JSONResponse({"object": "webhook", "url": webhook.url, "secret": webhook.secret, "message": SECRET_NOTICE})


@router.delete("/webhook", status_code=204, responses=ERROR_RESPONSES)
async def delete_webhook(request: Request) -> Response:
    """Remove the account endpoint (pending deliveries are then skipped)."""
    account = authenticate(request)
    _require(account)
    account.webhook = None
    return Response(status_code=204)
