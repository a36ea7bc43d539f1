"""Reading and validating the body of ``POST /checks`` and ``POST /uploads`` by hand.

FastAPI's own body validation would answer with its default 422 shape and would buffer
multipart files without our 4 MB rule; parsing here keeps every failure in the service's
error shape, names the offending field, and never holds more than the limit in memory.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from doccheck.emulator._api_errors import ApiError, invalid_input, too_large
from doccheck.emulator._service_limits import (
    DRAIN_LIMIT,
    JSON_BODY_LIMIT,
    MULTIPART_FILE_LIMIT,
    MULTIPART_OVERHEAD,
    BodyIncomplete,
    BodyTooLarge,
    ascii_int,
    body_chunks,
    drain,
)
from doccheck.emulator._store import PRODUCTS
from doccheck.errors import JsonRejected
from doccheck.guards import bounded_json

MAX_NAME_LENGTH = 256
MAX_METADATA_BYTES = 16 * 1024
MAX_ID_LENGTH = 256
#: How deep any JSON body or metadata may nest (objects and lists); deeper answers 422.
MAX_JSON_DEPTH = 32
INCOMPLETE_BODY = "the request body ended before its end (the client went away or was too slow)"


@dataclass
class FileInput:
    filename: str
    data: bytes


@dataclass
class CheckInput:
    """The raw fields of a create-check request, before semantic validation."""

    text: Any = None
    file: FileInput | None = None
    upload_id: Any = None
    products: Any = None
    name: Any = None
    metadata: Any = None
    webhook_url: Any = None
    fields: set[str] = field(default_factory=set)


async def _limited(request: Request, limit: int) -> AsyncGenerator[bytes, None]:
    """The request body as chunks, raising :class:`BodyTooLarge` past ``limit`` bytes."""
    seen = 0
    async for chunk in body_chunks(request.receive):
        seen += len(chunk)
        if seen > limit:
            raise BodyTooLarge(seen)
        yield chunk


async def _refuse_oversize(request: Request, limit: int, message: str) -> None:
    """413 early from Content-Length, draining (not storing) what the client still sends."""
    declared = ascii_int(request.headers.get("content-length", ""))
    if declared is not None and declared > limit:
        if declared <= DRAIN_LIMIT:
            await drain(body_chunks(request.receive))
        raise too_large(message)


async def read_json_object(request: Request, limit: int = JSON_BODY_LIMIT) -> dict[str, Any]:
    """The JSON object body, or a clear 413/422."""
    message = f"request body is larger than {limit // (1024 * 1024)} MB"
    await _refuse_oversize(request, limit, message)
    body = bytearray()
    try:
        async for chunk in _limited(request, limit):
            body.extend(chunk)
    except BodyTooLarge:
        await drain(body_chunks(request.receive))
        raise too_large(message) from None
    except BodyIncomplete:
        raise invalid_input(INCOMPLETE_BODY) from None
    if not body.strip():
        raise invalid_input("request body is empty; expected a JSON object")
    try:  # strict and bounded: no NaN/Infinity, huge numbers, deep nesting or lone surrogates
        value = bounded_json.loads(bytes(body), max_bytes=limit, max_depth=MAX_JSON_DEPTH)
    except JsonRejected as exc:
        raise invalid_input(f"request body is not acceptable JSON: {exc}") from None
    if not isinstance(value, dict):
        raise invalid_input("request body must be a JSON object")
    return value


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def read_check_input(request: Request) -> CheckInput:
    """Parse JSON or multipart into a :class:`CheckInput` (types are checked later)."""
    kind = media_type(request)
    if kind == "multipart/form-data":
        return await _read_multipart(request)
    if kind in ("application/json", "") or kind.endswith("+json"):
        body = await read_json_object(request)
        data = {k: v for k, v in body.items() if v is not None}
        known = {"text", "upload_id", "products", "name", "metadata", "webhook_url"}
        if "file" in data:
            raise invalid_input("field 'file' must be sent as multipart/form-data")
        return CheckInput(**{k: data[k] for k in known if k in data}, fields=set(data) & known)
    raise invalid_input(f"unsupported request Content-Type {kind!r}; use application/json or multipart/form-data")


async def _read_multipart(request: Request) -> CheckInput:
    limit = MULTIPART_FILE_LIMIT + MULTIPART_OVERHEAD
    message = "multipart file is larger than 4 MB; use POST /uploads for files up to 50 MB"
    await _refuse_oversize(request, limit, message)
    parser = MultiPartParser(
        request.headers, _limited(request, limit), max_files=1, max_fields=50, max_part_size=MULTIPART_FILE_LIMIT
    )
    try:
        form = await parser.parse()
    except BodyTooLarge:
        await drain(body_chunks(request.receive))
        raise too_large(message) from None
    except BodyIncomplete:
        raise invalid_input(INCOMPLETE_BODY) from None
    except MultiPartException as exc:
        raise invalid_input(f"malformed multipart body: {exc.message}") from None
    except (ValueError, UnicodeError) as exc:
        raise invalid_input(f"malformed multipart body ({type(exc).__name__})") from None
    result = CheckInput()
    try:
        for key, value in form.multi_items():
            if key == "file":
                if not isinstance(value, UploadFile):
                    raise invalid_input("field 'file' must be a file part with a filename")
                if (value.size or 0) > MULTIPART_FILE_LIMIT:
                    raise too_large(message)
                data = await value.read(MULTIPART_FILE_LIMIT + 1)
                if len(data) > MULTIPART_FILE_LIMIT:
                    raise too_large(message)
                result.file = FileInput(filename=value.filename or "", data=data)
            elif isinstance(value, UploadFile):
                raise invalid_input(f"field {key!r} must be a plain form field, not a file")
            elif key == "products":
                result.products = [*(result.products or []), value]
            elif key == "metadata":
                try:
                    result.metadata = bounded_json.loads(value, max_bytes=MAX_METADATA_BYTES, max_depth=MAX_JSON_DEPTH)
                except JsonRejected as exc:
                    raise invalid_input(f"field 'metadata' is not acceptable JSON: {exc}") from None
            elif key in ("text", "upload_id", "name", "webhook_url"):
                if key in result.fields:
                    raise invalid_input(f"field {key!r} was given more than once")
                setattr(result, key, value)
            else:
                continue  # unknown fields are ignored, as in JSON
            result.fields.add(key)
    finally:
        await form.close()
    return result


# ---- semantic validation -------------------------------------------------------------


def products_of(value: Any) -> list[str]:
    """Validated product list in canonical order; default ``["ai"]``."""
    if value is None:
        return ["ai"]
    if isinstance(value, str) or not isinstance(value, list):
        raise ApiError(422, "invalid_products", "'products' must be a list of 'ai' and/or 'similarity'")
    if not value:
        raise ApiError(422, "invalid_products", "'products' must not be empty")
    bad = [v for v in value if v not in PRODUCTS]
    if bad:
        shown = str(bad[0])[:40] if isinstance(bad[0], str) else type(bad[0]).__name__
        raise ApiError(422, "invalid_products", f"invalid product {shown!r}; allowed: 'ai', 'similarity'")
    return [p for p in PRODUCTS if p in value]


def optional_str(value: Any, name: str, max_length: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_input(f"field {name!r} must be a string")
    if len(value) > max_length:
        raise invalid_input(f"field {name!r} is longer than {max_length} characters")
    return value


def metadata_of(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_input("field 'metadata' must be a JSON object")
    try:  # the checks' listing must always be able to write it back as strict JSON
        bounded_json.check_value(value, max_depth=MAX_JSON_DEPTH)
        encoded = json.dumps(value, allow_nan=False)
    except (ValueError, RecursionError) as exc:
        raise invalid_input(f"field 'metadata' is not acceptable JSON: {exc}") from None
    if len(encoded) > MAX_METADATA_BYTES:
        raise invalid_input(f"field 'metadata' is larger than {MAX_METADATA_BYTES} bytes")
    return value


def products_fingerprint(value: Any) -> str:
    """The product part of the idempotency fingerprint, tolerant of invalid values."""
    if value is None:
        return "ai"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(sorted(set(value)))
    return json.dumps(value, sort_keys=True, default=str)
