"""Response parsing: typed errors from the service's error envelope or a transport
failure, and models from successful answers (never echoing the API key).
"""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
import pydantic
from pydantic import SecretStr

from doccheck.client import assumptions as A
from doccheck.client._auth import scrub as _scrub
from doccheck.client._models import Check, CheckList
from doccheck.client._profile import INVALID_RESPONSE, error_from_body, normalise_check, retry_after_seconds
from doccheck.errors import (
    AuthenticationError,
    ConflictError,
    DocCheckError,
    NetworkError,
    NotFoundError,
    PaymentRequiredError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    UploadExpiredError,
    ValidationError,
)

M = TypeVar("M", bound=pydantic.BaseModel)


_BY_STATUS: dict[int, type[DocCheckError]] = {
    400: ValidationError,
    401: AuthenticationError,
    402: PaymentRequiredError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: ValidationError,
    415: ValidationError,
    422: ValidationError,
    429: RateLimitError,
}

_BY_CODE: dict[str, type[DocCheckError]] = {
    "upload_url_expired": UploadExpiredError,
}


def error_class_for(status_code: int, code: str | None = None) -> type[DocCheckError]:
    """The exception class for an HTTP error answer (code-specific subclass first)."""
    if code and code in _BY_CODE:
        return _BY_CODE[code]
    if status_code >= 500:
        return ServerError
    return _BY_STATUS.get(status_code, DocCheckError)


def _retry_after(response: httpx.Response) -> float | None:
    """The server's ``Retry-After`` in seconds: a number or an HTTP date (see the profile)."""
    return retry_after_seconds(response.headers.get(A.RETRY_AFTER_HEADER))


def error_from_response(response: httpx.Response, api_key: SecretStr | None = None) -> DocCheckError:
    """The typed exception for a non-2xx answer, keeping the service's own code and message.

    Every error body shape the profile reads (ours, ``{"message"}``, ``{"detail"}``, RFC
    9457 problem+json, plain text) gives its message; a body with none (a proxy's HTML
    page) gives the HTTP reason and a generic code. The text is cut short and never
    contains the API key.
    """
    status = response.status_code
    request_id = response.headers.get(A.REQUEST_ID_HEADER)
    try:
        body = response.json()
    except ValueError:
        body = None
    code, message = error_from_body(body, _body_text(response), response.headers.get("content-type", ""))
    if isinstance(body, dict) and isinstance(body.get(A.ERROR_ENVELOPE_KEY), dict):
        inner = body[A.ERROR_ENVELOPE_KEY]
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


def _body_text(response: httpx.Response) -> str:
    try:
        return response.text[:2000]
    except (UnicodeDecodeError, LookupError, httpx.ResponseNotRead):
        return ""


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
            code=INVALID_RESPONSE,
            request_id=response.headers.get(A.REQUEST_ID_HEADER),
        ) from exc


def parse_check(response: httpx.Response) -> Check:
    """A :class:`Check` read through the service profile, marked ``replayed`` when the
    service says it is an idempotent replay.

    A check the models cannot read is an ``invalid_response`` error of that request (the
    caller makes it that document's error), never a crash of the run.
    """
    check = _validated(Check, normalise_check(_json_body(response)), response)
    check.replayed = response.headers.get(A.REPLAY_HEADER, "").lower() == "true"
    return check


def parse_check_list(response: httpx.Response) -> CheckList:
    """A page of ``GET /checks``, each check read through the service profile."""
    body = _json_body(response)
    if isinstance(body, dict) and isinstance(body.get("data"), list):
        body = {**body, "data": [normalise_check(item) for item in body["data"]]}
    return _validated(CheckList, body, response)


def _validated(model: type[M], body: Any, response: httpx.Response) -> M:
    try:
        return model.model_validate(body)
    except pydantic.ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        kind = errors[0]["type"] if errors else "invalid"
        raise DocCheckError(
            f"the service's answer does not read as a {model.__name__.lower()} ({where or 'body'}: {kind})",
            status_code=response.status_code,
            code=INVALID_RESPONSE,
            request_id=response.headers.get(A.REQUEST_ID_HEADER),
        ) from None
