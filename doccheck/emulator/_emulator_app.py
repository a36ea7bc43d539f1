"""The API application: ``/api/v1`` routes, the control surface, and the error policy.

Every response of ``/api/v1`` carries ``X-Request-Id``. Faults that must hit a request
before it does any work (latency, random 5xx) are applied at the edge, in an ASGI
middleware, so a retried POST after an injected 5xx is always safe. Exception handlers
turn every failure, including FastAPI's own validation and routing errors, into the
service's ``{"error": {"code", "message"}}`` body; an unexpected bug answers 500 in that
shape too, logged in one line rather than as a traceback.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from doccheck.emulator import _control as control
from doccheck.emulator._api_errors import ApiError, error_response
from doccheck.emulator._routes import checks, uploads, webhook
from doccheck.emulator._runtime import Emulator
from doccheck.emulator._variants import VariantEdge, VariantState

API_PREFIX = "/api/v1"
_NO_FAULT_PATHS = {f"{API_PREFIX}/openapi.json", f"{API_PREFIX}/docs"}


def _request_id(request: Request) -> str | None:
    request_id: str | None = request.scope.get("state", {}).get("request_id")
    return request_id


class ApiEdge:
    """Pure ASGI middleware: request id, injected latency and 5xx, last-resort 500."""

    def __init__(self, app: Any, emu: Emulator) -> None:
        self.app = app
        self.emu = emu

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = "req_" + uuid.uuid4().hex[:24]
        scope.setdefault("state", {})["request_id"] = request_id
        started = False

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                MutableHeaders(scope=message)["X-Request-Id"] = request_id
            await send(message)

        path: str = scope.get("path", "")
        if path.startswith(API_PREFIX) and path not in _NO_FAULT_PATHS:
            settings = self.emu.faults.settings
            if settings.latency_ms:
                await asyncio.sleep(settings.latency_ms / 1000)
            try:
                self.emu.faults.maybe_server_error()
            except ApiError as exc:
                await error_response(exc.status, exc.code, exc.message, request_id)(scope, receive, send)
                return
        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:  # noqa: BLE001 - a bug: answer in the service's shape, no traceback
            print(
                f"emulator: unexpected {type(exc).__name__} on {scope.get('method')} {path} [{request_id}]", flush=True
            )
            if not started:
                await error_response(500, "internal_error", "unexpected emulator error", request_id)(
                    scope, receive, send
                )


def create_app(emu: Emulator, profile: str = "default") -> FastAPI:
    """The FastAPI app serving ``/api/v1`` and ``/_emulator`` for ``emu``, answering as the
    variant ``profile`` (:mod:`doccheck.emulator._variants`)."""
    app = FastAPI(
        title="Document check service (doccheck emulator)",
        version="1",
        description="Local emulator of the document-check service interface. Authenticate with "
        "`Authorization: Bearer <API_KEY>`.",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
    )
    app.state.emulator = emu
    app.state.variants = VariantState(profile)
    emu.profile_of = app.state.variants.for_key  # the webhook sender each account plays
    for router in (checks.router, uploads.router, webhook.router):
        app.include_router(router, prefix=API_PREFIX)
    app.include_router(control.router)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        return error_response(exc.status, exc.code, exc.message, _request_id(request), exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0].get("loc", ())) if errors else "request"
        message = errors[0].get("msg", "invalid") if errors else "invalid request"
        return error_response(422, "invalid_input", f"{where}: {message}", _request_id(request))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            return error_response(404, "not_found", "no such endpoint", _request_id(request))
        if exc.status_code == 405:
            return error_response(
                405, "method_not_allowed", "method not allowed on this endpoint", _request_id(request)
            )
        return error_response(exc.status_code, "http_error", str(exc.detail), _request_id(request))

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(ApiEdge, emu=emu)
    app.add_middleware(VariantEdge, state=app.state.variants)  # outermost: rewrites the edge's answers too
    return app
