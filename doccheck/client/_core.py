"""The one implementation of request building and response parsing (sans-I/O).

Each operation is a generator that yields :class:`RequestSpec` objects and receives the
successful ``httpx.Response`` for each; it returns the parsed model. The sync and async
clients only drive these generators (send, retry, raise typed errors), so the two
transports cannot drift apart, and multi-request flows such as the upload are written once.
"""

from __future__ import annotations

import json as _json
from collections.abc import AsyncIterator, Generator, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pydantic import SecretStr

from doccheck import __version__
from doccheck.client import assumptions as A
from doccheck.client.errors import (
    ConfigurationError,
    DocCheckError,
    LocalValidationError,
    NetworkError,
    RateLimitError,
    error_class_for,
)
from doccheck.client.models import Check, CheckList, Upload, Webhook
from doccheck.client.retry import RetryMode

T = TypeVar("T")
Operation = Generator["RequestSpec", httpx.Response, T]

USER_AGENT = f"doccheck/{__version__} httpx/{httpx.__version__}"
CHUNK_SIZE = 64 * 1024


@dataclass
class RequestSpec:
    """Everything needed to (re)build one HTTP request; rebuilt for every attempt so that
    a streamed file is reopened from the start on a retry."""

    method: str
    path: str
    retry: RetryMode = RetryMode.SAFE
    params: dict[str, Any] | None = None
    json: Any = None
    form: dict[str, Any] | None = None
    file_path: Path | None = None
    file_field: str = "file"
    filename: str | None = None
    file_content_type: str | None = None
    body_path: Path | None = None
    body_bytes: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: True for the storage PUT: absolute URL, plain client, no Authorization header.
    external: bool = False

    @property
    def what(self) -> str:
        """Method and path for logs (no query string, no host for external URLs)."""
        path = httpx.URL(self.path).path if self.external else self.path
        return f"{self.method} {path}"

    def body_length(self) -> int | None:
        if self.body_bytes is not None:
            return len(self.body_bytes)
        if self.body_path is not None:
            return self.body_path.stat().st_size
        return None


def _iter_file(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK_SIZE):
            yield chunk


async def _aiter_file(path: Path) -> AsyncIterator[bytes]:
    # Local-disk reads of 64 KiB are short enough not to need a thread per chunk.
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK_SIZE):
            yield chunk


def build_request(client: httpx.Client | httpx.AsyncClient, spec: RequestSpec, stack: ExitStack) -> httpx.Request:
    """An ``httpx.Request`` for ``spec`` on ``client``; files opened here are closed by ``stack``."""
    headers = dict(spec.headers)
    kwargs: dict[str, Any] = {"params": spec.params, "headers": headers}
    if spec.json is not None:
        kwargs["json"] = spec.json
    if spec.file_path is not None:
        fh = stack.enter_context(spec.file_path.open("rb"))
        kwargs["data"] = spec.form or {}
        kwargs["files"] = {spec.file_field: (spec.filename or spec.file_path.name, fh, spec.file_content_type)}
    elif spec.form is not None:
        kwargs["data"] = spec.form
    if spec.body_bytes is not None:
        kwargs["content"] = spec.body_bytes
    elif spec.body_path is not None:
        headers["Content-Length"] = str(spec.body_length())
        is_async = isinstance(client, httpx.AsyncClient)
        kwargs["content"] = _aiter_file(spec.body_path) if is_async else _iter_file(spec.body_path)
    return client.build_request(spec.method, spec.path, **kwargs)


# --- configuration --------------------------------------------------------------------


def resolve_config(base_url: str | None, api_key: str | SecretStr | None) -> tuple[str, SecretStr]:
    """Base URL and API key from the arguments or ``DOCCHECK_BASE_URL`` / ``DOCCHECK_API_KEY``.

    The base must be an http(s) URL ending in ``/api/v1`` because every path of the
    interface is relative to it; a bare host would silently hit the wrong paths.
    """
    from doccheck.config import Settings

    settings = Settings()
    url = base_url if base_url is not None else settings.base_url
    if not url:
        raise ConfigurationError("no base URL: pass base_url or set DOCCHECK_BASE_URL (ending in /api/v1)")
    url = url.strip().rstrip("/")
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigurationError(f"base URL must be an http(s) URL ending in {A.API_VERSION_SUFFIX}, got {url!r}")
    if not parsed.path.endswith(A.API_VERSION_SUFFIX) or parsed.query:
        raise ConfigurationError(
            f"base URL must end in {A.API_VERSION_SUFFIX} (the interface version is in the path), got {url!r}"
        )
    key: SecretStr | None
    if api_key is None:
        key = settings.api_key
    else:
        key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)
    if key is None or not key.get_secret_value().strip():
        raise ConfigurationError("no API key: pass api_key or set DOCCHECK_API_KEY")
    return url, key


def http_options(
    base_url: str,
    api_key: SecretStr,
    *,
    timeout: float | httpx.Timeout,
    transport: Any,
    upload_transport: Any,
    max_connections: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword arguments of the two httpx clients (sync or async alike): the service's, which
    authenticates, and the storage origin's, which must never see the API key. Redirects
    are never followed: a redirected request could carry the key to another host."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    service = {
        "base_url": base_url,
        "auth": BearerAuth(api_key),
        "headers": {"User-Agent": USER_AGENT, "Accept": "application/json"},
        "timeout": timeout,
        "limits": limits,
        "transport": transport,
        "follow_redirects": False,
    }
    storage = {
        "headers": {"User-Agent": USER_AGENT},
        "timeout": timeout,
        "limits": limits,
        "transport": upload_transport or transport,
        "follow_redirects": False,
    }
    return service, storage


class BearerAuth(httpx.Auth):
    """Adds ``Authorization: Bearer`` from a SecretStr; its repr never shows the key."""

    def __init__(self, key: SecretStr) -> None:
        self._key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._key.get_secret_value()}"
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(key=**********)"


# --- responses ------------------------------------------------------------------------


def _scrub(text: str, secret: SecretStr | None) -> str:
    if secret is not None:
        raw = secret.get_secret_value()
        if raw and raw in text:
            text = text.replace(raw, "**********")
    return text


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


# --- operations -----------------------------------------------------------------------


def normalise_products(products: Sequence[str] | None, *, validate: bool) -> list[str] | None:
    """Products as a de-duplicated list (a bare string counts as one product).

    ``create_check`` sends what it is given (``validate=False``): it mirrors the endpoint and
    the service is the judge (``422 invalid_products``). ``submit`` validates locally first,
    so a bad manifest row costs no request.
    """
    if products is None:
        return None
    if isinstance(products, str):
        products = [products]
    out = list(dict.fromkeys(products))
    if validate:
        bad = [p for p in out if p not in A.PRODUCTS]
        if bad or not out:
            raise LocalValidationError(
                f"invalid products {bad or out!r}: choose one or both of {sorted(A.PRODUCTS)}", code="invalid_products"
            )
    return out


def create_check_spec(
    *,
    text: str | None = None,
    file: str | Path | None = None,
    filename: str | None = None,
    upload_id: str | None = None,
    products: Sequence[str] | None = None,
    name: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    webhook_url: str | None = None,
    idempotency_key: str | None = None,
) -> RequestSpec:
    """``POST /checks`` from text (JSON), a file (multipart) or an upload_id (JSON).

    Exactly-one-input is NOT enforced here: the service's answer for none or several is its
    business (422 ``invalid_input``), and tests exercise it through this client.
    """
    prods = normalise_products(products, validate=False)
    headers = {A.IDEMPOTENCY_HEADER: idempotency_key} if idempotency_key else {}
    retry = RetryMode.SAFE if idempotency_key else RetryMode.NEVER
    if file is not None:
        path = Path(file)
        form: dict[str, Any] = {}
        if text is not None:
            form["text"] = text
        if upload_id is not None:
            form["upload_id"] = upload_id
        if prods is not None:
            form["products"] = prods  # httpx repeats the field once per value
        if name is not None:
            form["name"] = name
        if metadata is not None:
            form["metadata"] = _json.dumps(dict(metadata))  # assumption: JSON text field
        if webhook_url is not None:
            form["webhook_url"] = webhook_url
        fname = filename or path.name
        return RequestSpec(
            "POST",
            A.CHECKS_PATH,
            retry=retry,
            form=form,
            file_path=path,
            filename=fname,
            file_content_type=A.content_type_for(fname) or "application/octet-stream",
            headers=headers,
        )
    body: dict[str, Any] = {}
    if text is not None:
        body["text"] = text
    if upload_id is not None:
        body["upload_id"] = upload_id
    if prods is not None:
        body["products"] = prods
    if name is not None:
        body["name"] = name
    if metadata is not None:
        body["metadata"] = dict(metadata)
    if webhook_url is not None:
        body["webhook_url"] = webhook_url
    return RequestSpec("POST", A.CHECKS_PATH, retry=retry, json=body, headers=headers)


def op_create_check(**kwargs: Any) -> Operation[Check]:
    response = yield create_check_spec(**kwargs)
    return parse_check(response)


def op_create_upload(filename: str, content_type: str | None = None, size_bytes: int | None = None) -> Operation[Upload]:
    body: dict[str, Any] = {"filename": filename}
    if content_type is not None:
        body["content_type"] = content_type
    if size_bytes is not None:
        body["size_bytes"] = int(size_bytes)
    response = yield RequestSpec("POST", A.UPLOADS_PATH, retry=RetryMode.NOT_REACHED, json=body)
    return Upload.model_validate(_json_body(response))


def put_upload_spec(upload: Upload, data: str | Path | bytes) -> RequestSpec:
    """The storage PUT: exactly the returned Content-Type, no Authorization (the signed
    address is the authorization, and our key must not travel to another origin)."""
    spec = RequestSpec(
        "PUT", upload.upload_url, retry=RetryMode.SAFE, headers={"Content-Type": upload.content_type}, external=True
    )
    if isinstance(data, bytes):
        spec.body_bytes = data
    else:
        spec.body_path = Path(data)
    return spec


def op_put_upload(upload: Upload, data: str | Path | bytes) -> Operation[None]:
    yield put_upload_spec(upload, data)
    return None


def op_get_check(check_id: str) -> Operation[Check]:
    response = yield RequestSpec("GET", A.check_path(_path_segment(check_id, "check_id")))
    return parse_check(response)


def op_list_checks(limit: int | None = None, starting_after: str | None = None) -> Operation[CheckList]:
    params: dict[str, Any] = {}
    if limit is not None:
        params["limit"] = int(limit)
    if starting_after is not None:
        params["starting_after"] = starting_after
    response = yield RequestSpec("GET", A.CHECKS_PATH, params=params or None)
    return CheckList.model_validate(_json_body(response))


def file_spec(check_id: str, kind: str) -> RequestSpec:
    """The GET of a report file (validated kind and id); shared by ``get_file`` and the
    streamed ``download_file``."""
    if kind not in A.FILE_KINDS:
        raise LocalValidationError(f"unknown file kind {kind!r}: one of {sorted(A.FILE_KINDS)}", code="invalid_kind")
    # Report files are PDFs or the original document, not JSON: accept any type.
    return RequestSpec("GET", A.check_file_path(_path_segment(check_id, "check_id"), kind), headers={"Accept": "*/*"})


def op_get_file(check_id: str, kind: str) -> Operation[bytes]:
    response = yield file_spec(check_id, kind)
    return response.content


def op_get_webhook() -> Operation[Webhook]:
    response = yield RequestSpec("GET", A.WEBHOOK_PATH)
    return Webhook.model_validate(_json_body(response))


def op_put_webhook(url: str) -> Operation[Webhook]:
    response = yield RequestSpec("PUT", A.WEBHOOK_PATH, json={"url": url})
    return Webhook.model_validate(_json_body(response))


def op_rotate_webhook() -> Operation[Webhook]:
    response = yield RequestSpec("POST", A.WEBHOOK_ROTATE_PATH, retry=RetryMode.NOT_REACHED)
    return Webhook.model_validate(_json_body(response))


def op_delete_webhook() -> Operation[None]:
    yield RequestSpec("DELETE", A.WEBHOOK_PATH)
    return None


def _path_segment(value: str, field_name: str) -> str:
    """Refuse ids that would change the path ("../", "?"): they are caller data, not paths."""
    if not isinstance(value, str) or not value or any(c in value for c in "/?#%\\") or value in (".", ".."):
        raise LocalValidationError(f"{field_name} is not a valid identifier: {value!r}", code="invalid_input")
    return value
