"""The one error shape of the service, ``{"error": {"code", "message"}}``, and its raiser.

Every failure path of the emulator raises :class:`ApiError` (or is converted into one by
the app's exception handlers), so no request can answer with FastAPI's default 422 body
or a bare 500.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse


class ApiError(Exception):
    """An HTTP error with a DESIGN.md code; ``headers`` e.g. ``Retry-After``."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def error_body(code: str, message: str, request_id: str | None = None) -> dict[str, Any]:
    """The error body; the request id is quoted so a caller can report it."""
    inner: dict[str, Any] = {"code": code, "message": message}
    if request_id:
        inner["request_id"] = request_id
    return {"error": inner}


def error_response(
    status: int, code: str, message: str, request_id: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    """A JSONResponse carrying :func:`error_body`."""
    all_headers = dict(headers or {})
    if request_id:
        all_headers["X-Request-Id"] = request_id
    return JSONResponse(error_body(code, message, request_id), status_code=status, headers=all_headers)


# Shorthands, so call sites read like the DESIGN table.
def invalid_input(message: str) -> ApiError:
    return ApiError(422, "invalid_input", message)


def not_found(message: str = "no such resource") -> ApiError:
    return ApiError(404, "not_found", message)


def too_large(message: str) -> ApiError:
    return ApiError(413, "file_too_large", message)
