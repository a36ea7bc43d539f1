"""Response parsing: typed errors from the service's error envelope or a transport
failure, and models from successful answers (never echoing the API key).
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import SecretStr

from doccheck.client import assumptions as A
from doccheck.client._auth import scrub as _scrub
from doccheck.client.errors import DocCheckError, NetworkError, RateLimitError, error_class_for
from doccheck.client.models import Check


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get(A.RETRY_AFTER_HEADER)
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # HTTP-date form: not used by the service (assumption), fall back to backoff


def error_from_response(response: httpx.Response, api_key: SecretStr | None = None) -> DocCheckError:
    """The typed exception for a non-2xx answer, from the ``{"error": {...}}`` envelope.

    A body that is not the envelope (a proxy's HTML page) still gives a typed error with
    a generic code; its text is cut short and never contains the API key.
    """
    status = response.status_code
    request_id = response.headers.get(A.REQUEST_ID_HEADER)
    code: str | None = None
    message: str | None = None
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get(A.ERROR_ENVELOPE_KEY), dict):
        inner = body[A.ERROR_ENVELOPE_KEY]
        code = inner.get("code") if isinstance(inner.get("code"), str) else None
        message = inner.get("message") if isinstance(inner.get("message"), str) else None
        request_id = request_id or (inner.get("request_id") if isinstance(inner.get("request_id"), str) else None)
    if message is None:
        message = response.reason_phrase or "HTTP error"
    if code is None:
        code = f"http_{status}"
    message = _scrub(message[:500], api_key)
    cls = error_class_for(status, code)
    kwargs: dict[str, Any] = {"status_code": status, "code": code, "request_id": request_id}
    if issubclass(cls, RateLimitError):
        kwargs["retry_after"] = _retry_after(response)
    return cls(message, **kwargs)


def network_error(exc: httpx.TransportError, what: str) -> NetworkError:
    """A :class:`NetworkError` for an httpx transport failure; ``connect`` when nothing was sent."""
    connect = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
    return NetworkError(f"{what} failed: {type(exc).__name__}", connect=connect, code="network_error")


def _json_body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise DocCheckError(
            "the service answered with a body that is not JSON",
            status_code=response.status_code,
            code="invalid_response",
            request_id=response.headers.get(A.REQUEST_ID_HEADER),
        ) from exc


def parse_check(response: httpx.Response) -> Check:
    """A :class:`Check`, marked ``replayed`` when the service says it is an idempotent replay."""
    check = Check.model_validate(_json_body(response))
    check.replayed = response.headers.get(A.REPLAY_HEADER, "").lower() == "true"
    return check
