"""OpenAPI fragments for routes whose bodies are parsed by hand (see :mod:`._inputs`).

The routes read ``Request`` directly so that every error keeps the service's shape; these
fragments put the real request bodies back into ``/api/v1/openapi.json`` so that clients
and fuzzers (schemathesis) see what is accepted.
"""

from __future__ import annotations

from typing import Any

_PRODUCTS = {"type": "array", "items": {"type": "string", "enum": ["ai", "similarity"]}, "minItems": 1}
_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        }
    },
}

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"description": desc, "content": {"application/json": {"schema": _ERROR}}}
    for code, desc in [
        (401, "unauthorized"),
        (402, "insufficient_balance"),
        (404, "not found"),
        (409, "conflict"),
        (413, "file_too_large"),
        (415, "unsupported_file_type"),
        (422, "invalid input"),
        (429, "rate_limited"),
    ]
}

CHECK_RESPONSES = ERROR_RESPONSES

CREATE_CHECK_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "upload_id": {"type": "string"},
                        "products": _PRODUCTS,
                        "name": {"type": "string"},
                        "metadata": {"type": "object"},
                        "webhook_url": {"type": "string"},
                    },
                }
            },
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "products": _PRODUCTS,
                        "name": {"type": "string"},
                        "metadata": {"type": "string"},
                    },
                }
            },
        },
    },
    "parameters": [{"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}}],
}

CREATE_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["filename"],
                    "properties": {
                        "filename": {"type": "string"},
                        "content_type": {"type": "string"},
                        "size_bytes": {"type": "integer"},
                    },
                }
            }
        },
    }
}

PUT_WEBHOOK_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "required": ["url"], "properties": {"url": {"type": "string"}}}
            }
        },
    }
}

LIST_PARAMS: dict[str, Any] = {
    "parameters": [
        {
            "name": "limit",
            "in": "query",
            "required": False,
            "schema": {"type": "integer", "minimum": 1, "maximum": 100},
        },
        {"name": "starting_after", "in": "query", "required": False, "schema": {"type": "string"}},
    ]
}
