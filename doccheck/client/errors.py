"""Typed exceptions of the client: one class per error family of DESIGN.md.

Callers branch on the class (``except ConflictError``) or on ``.code`` (the service's
machine-readable code), never on message text. Every message is built from the service's
error envelope and the request id, never from request data, so the API key cannot leak
into a log line through an exception.
"""

from __future__ import annotations

from doccheck.errors import DocCheckBaseError


class ConfigurationError(DocCheckBaseError, ValueError):
    """The client was set up wrongly (base URL without ``/api/v1``, no API key...)."""


class DocCheckError(DocCheckBaseError):
    """An error answered by (or on the way to) the service.

    ``status_code`` is None for errors that never got an HTTP answer (network).
    ``after_retry`` is True when the client had sent the same request before (its own
    retries): an earlier try may have reached the service, so a refusal of a create may
    be about a check that try made (a service refusing key reuse), not about the document.
    """

    after_retry: bool = False

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        self.status_code = status_code
        self.code = code
        self.message = message
        self.request_id = request_id
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.status_code is not None:
            parts.append(str(self.status_code))
        if self.code:
            parts.append(self.code)
        head = " ".join(parts)
        text = f"{head}: {self.message}" if head else self.message
        if self.request_id:
            text += f" (request id {self.request_id})"
        return text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status_code={self.status_code!r}, code={self.code!r}, "
            f"message={self.message!r}, request_id={self.request_id!r})"
        )

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only constructors defeat Exception's default pickling; Prefect and
        # multiprocessing pickle exceptions that cross a process or are persisted.
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))


def _rebuild(cls: type[DocCheckError], message: str, state: dict[str, object]) -> DocCheckError:
    error = cls.__new__(cls)
    Exception.__init__(error, "")
    error.__dict__.update(state)
    error.message = message
    Exception.__init__(error, error._render())
    return error


class AuthenticationError(DocCheckError):
    """401: missing or unknown API key."""


class PermissionDeniedError(DocCheckError):
    """403: refused, e.g. ``upload_url_expired`` from the storage origin."""


class UploadExpiredError(PermissionDeniedError):
    """403 ``upload_url_expired``: the signed upload address is older than 10 minutes."""


class ValidationError(DocCheckError):
    """400/413/415/422: the service rejected the input (``invalid_input``, ``file_too_large``...)."""


class NotFoundError(DocCheckError):
    """404: unknown check (``not_found``) or upload (``upload_not_found``)."""


class ConflictError(DocCheckError):
    """409: ``upload_consumed``, ``upload_incomplete``, ``too_many_uploads``,
    ``webhook_not_configured``, ``idempotency_conflict``."""


class PaymentRequiredError(DocCheckError):
    """402 ``insufficient_balance``."""


class RateLimitError(DocCheckError):
    """429 ``rate_limited``; ``retry_after`` is the server's hint in seconds (or None)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)  # type: ignore[arg-type]


class ServerError(DocCheckError):
    """5xx: the service failed; retried automatically where that is safe."""


class NetworkError(DocCheckError):
    """No HTTP answer: connection refused/reset, DNS, timeout.

    ``connect`` is True when the request provably never reached the server (connect phase),
    which makes even a non-idempotent POST safe to send again.
    """

    def __init__(self, message: str, *, connect: bool = False, **kw: object) -> None:
        self.connect = connect
        super().__init__(message, **kw)  # type: ignore[arg-type]


class LocalValidationError(DocCheckError, ValueError):
    """A document refused locally, before any request (so it costs nothing)."""


class DocumentTooLarge(LocalValidationError):
    """The file is larger than the 50 MB upload limit."""


class UnsupportedDocument(LocalValidationError):
    """The file's extension is not a supported document type."""


class EmptyDocument(LocalValidationError):
    """Empty text or a zero-byte file."""


class DocumentNotFound(LocalValidationError):
    """The file does not exist or is not a regular file."""


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
