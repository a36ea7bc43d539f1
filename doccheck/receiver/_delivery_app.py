"""The webhook receiver as a Starlette app: verify, deduplicate, store, answer at once.

Every delivery is checked against the signing secret(s) on the RAW body before any JSON
parsing, then stored in the ledger once per event id; applying it to outcomes is the
pipeline's job, so the answer comes back in milliseconds (the service wants a 2xx within
10 seconds). Error answers are short fixed sentences: they never echo the body, the
header, or anything derived from a secret.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from doccheck.client import Event
from doccheck.errors import (
    DeliveryTooLarge,
    EventParseError,
    InvalidSignature,
    MalformedSignature,
    MissingSignature,
    SecretFileError,
    SignatureError,
    StaleSignature,
)
from doccheck.ledger import Ledger
from doccheck.receiver._group_commit import GroupWriter
from doccheck.webhooks import SIGNATURE_HEADER, parse_event, verify

log = logging.getLogger(__name__)

#: Event payloads are small JSON documents; 1 MiB is generous and bounds memory per request.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024

SecretsProvider = Callable[[], Sequence[str | SecretStr]]
#: Called with each newly stored event AFTER the answer is sent (e.g. a Prefect event emitter).
OnStored = Callable[[Event], Awaitable[object]]


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _read_body(request: Request, limit: int) -> bytes:
    """The raw body, refusing early: by Content-Length if declared, else while streaming."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise DeliveryTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise DeliveryTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(
    ledger: Ledger,
    secrets_provider: SecretsProvider,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    tolerance: int = 300,
    on_stored: OnStored | None = None,
    clock: Callable[[], float] | None = None,
) -> Starlette:
    """The receiver app: ``POST /webhook`` and ``GET /healthz``.

    Answers: 200 stored (or duplicate), 400 missing/malformed signature or unparsable
    event, 401 wrong or stale signature, 413 body over ``max_body_bytes``, 503 when no
    secret is configured or the ledger is unavailable (the service retries later).
    ``on_stored(event)`` runs after the answer has been sent, for new events only
    (``doccheck.receiver._prefect_events``), so it never delays or fails a delivery.
    ``clock`` is "now" for the signature's age (default the system clock; a test hands it
    the emulator's, which moves by days).
    """

    writer = GroupWriter(ledger)

    async def webhook(request: Request) -> JSONResponse:
        try:
            body = await _read_body(request, max_body_bytes)
        except DeliveryTooLarge:
            return _error(413, "body_too_large", f"request body is over {max_body_bytes} bytes")
        except ClientDisconnect:
            return _error(400, "client_disconnected", "the request body was not received")
        header = request.headers.get(SIGNATURE_HEADER)
        try:
            secrets = list(await run_in_threadpool(secrets_provider))
        except SecretFileError as exc:  # e.g. chmod'ed open: refuse until fixed, say why in the log
            log.error("cannot use the webhook secrets: %s", exc)
            return _error(503, "unavailable", "the receiver cannot read its signing secrets")
        except Exception:  # noqa: BLE001 - source down: ask the service to retry
            log.exception("cannot read the webhook secrets")
            return _error(503, "unavailable", "the receiver cannot read its signing secrets")
        if not any((s.get_secret_value() if isinstance(s, SecretStr) else s) for s in secrets):
            return _error(503, "not_configured", "the receiver has no signing secret configured")
        try:
            verify(body, header, secrets, tolerance=tolerance, now=clock() if clock is not None else None)
        except (MissingSignature, MalformedSignature) as exc:
            code = "missing_signature" if isinstance(exc, MissingSignature) else "malformed_signature"
            return _error(400, code, f"the {SIGNATURE_HEADER} header is missing or malformed")
        except StaleSignature:
            return _error(401, "stale_signature", "the signature timestamp is outside the tolerance")
        except (InvalidSignature, SignatureError):
            return _error(401, "invalid_signature", "the signature does not match")
        try:
            event = parse_event(body)
        except EventParseError:
            return _error(400, "invalid_event", "the event payload is not a valid event")
        try:
            stored = await writer.store(event, body)  # answered once its group commit is durable
        except Exception:  # noqa: BLE001 - the service will redeliver; nothing is lost
            log.exception("cannot store event %s", event.id)
            return _error(503, "unavailable", "the event could not be stored; retry later")
        log.info("event %s (%s %s) %s", event.id, event.type, event.product, "stored" if stored else "duplicate")
        background = BackgroundTask(on_stored, event) if (stored and on_stored is not None) else None
        return JSONResponse({"received": True, "duplicate": not stored}, background=background)

    async def healthz(_: Request) -> JSONResponse:
        try:
            pending = await run_in_threadpool(ledger.unapplied_event_count)
        except Exception:  # noqa: BLE001
            return JSONResponse({"status": "error", "ledger": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ok", "unapplied_events": pending})

    return Starlette(
        routes=[
            Route("/webhook", webhook, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ]
    )
