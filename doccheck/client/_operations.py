"""The operations of the interface, one generator each (sans-I/O).

Each operation yields :class:`~doccheck.client._requests.RequestSpec` objects and receives
the successful ``httpx.Response`` for each; it returns the parsed model. The sync and
async clients only drive these generators, so multi-request flows are written once.
"""

from __future__ import annotations

import json as _json
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from doccheck.client import assumptions as A
from doccheck.client._file_reads import as_location
from doccheck.client._models import Check, CheckList, Upload, Webhook
from doccheck.client._requests import RequestSpec
from doccheck.client._responses import _json_body, parse_check, parse_check_list
from doccheck.client._retry import RetryMode
from doccheck.errors import LocalValidationError

if TYPE_CHECKING:
    from doccheck.storage import UserPath

T = TypeVar("T")
Operation = Generator[RequestSpec, httpx.Response, T]


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
    file: str | Path | UserPath | None = None,
    filename: str | None = None,
    upload_id: str | None = None,
    products: Sequence[str] | None = None,
    name: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    webhook_url: str | None = None,
    idempotency_key: str | None = None,
    file_bytes: bytes | None = None,
    file_size: int | None = None,
) -> RequestSpec:
    """``POST /checks`` from text (JSON), a file (multipart) or an upload_id (JSON).

    ``file`` may be remote (a ``UPath`` or its URL); ``file_bytes``: its bytes already read,
    ``file_size``: its recorded size. Exactly-one-input is NOT enforced here: the service's
    answer for none or several is its business (422 ``invalid_input``), and tests exercise it
    through this client.
    """
    prods = normalise_products(products, validate=False)
    headers = {A.IDEMPOTENCY_HEADER: idempotency_key} if idempotency_key else {}
    retry = RetryMode.SAFE if idempotency_key else RetryMode.NEVER
    if file is not None:
        path = as_location(file)
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
            file_bytes=file_bytes,
            file_size=file_size,
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


def op_create_upload(
    filename: str, content_type: str | None = None, size_bytes: int | None = None
) -> Operation[Upload]:
    body: dict[str, Any] = {"filename": filename}
    if content_type is not None:
        body["content_type"] = content_type
    if size_bytes is not None:
        body["size_bytes"] = int(size_bytes)
    response = yield RequestSpec("POST", A.UPLOADS_PATH, retry=RetryMode.NOT_REACHED, json=body)
    return Upload.model_validate(_json_body(response))


def put_upload_spec(upload: Upload, data: str | Path | UserPath | bytes, size: int | None = None) -> RequestSpec:
    """The storage PUT: exactly the returned Content-Type, no Authorization (the signed
    address is the authorization, and our key must not travel to another origin). ``data``:
    the bytes, or a file streamed (local, or remote: ``size`` is then its recorded size)."""
    spec = RequestSpec(
        "PUT", upload.upload_url, retry=RetryMode.SAFE, headers={"Content-Type": upload.content_type}, external=True
    )
    if isinstance(data, bytes):
        spec.body_bytes = data
    else:
        spec.body_path = as_location(data)
        spec.body_size = size
    return spec


def op_put_upload(upload: Upload, data: str | Path | UserPath | bytes, size: int | None = None) -> Operation[None]:
    yield put_upload_spec(upload, data, size)
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
    return parse_check_list(response)


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
