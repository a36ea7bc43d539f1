"""The one implementation of request building and response parsing (sans-I/O).

Each operation is a generator that yields :class:`RequestSpec` objects and receives the
successful ``httpx.Response`` for each; it returns the parsed model. The sync and async
clients only drive these generators (send, retry, raise typed errors), so the two
transports cannot drift apart, and multi-request flows such as the upload are written once.

The pieces live in modules of their own, re-exported here so ``_core``'s names stay
importable (the clients use ``_core.<name>``):

- :mod:`~doccheck.client._config`: base URL and API key, the httpx clients' options;
- :mod:`~doccheck.client._auth`: the bearer header, scrubbing the key out of text;
- :mod:`~doccheck.client._requests`: :class:`RequestSpec` and :func:`build_request`;
- :mod:`~doccheck.client._responses`: typed errors and parsed models from answers;
- :mod:`~doccheck.client._operations`: one generator per operation of the interface.
"""

from __future__ import annotations

from doccheck.client._auth import BearerAuth
from doccheck.client._auth import scrub as _scrub
from doccheck.client._config import http_options, resolve_config
from doccheck.client._operations import (
    Operation,
    T,
    _path_segment,
    create_check_spec,
    file_spec,
    normalise_products,
    op_create_check,
    op_create_upload,
    op_delete_webhook,
    op_get_check,
    op_get_file,
    op_get_webhook,
    op_list_checks,
    op_put_upload,
    op_put_webhook,
    op_rotate_webhook,
    put_upload_spec,
)
from doccheck.client._requests import CHUNK_SIZE, USER_AGENT, RequestSpec, _aiter_file, _iter_file, build_request
from doccheck.client._responses import _json_body, _retry_after, error_from_response, network_error, parse_check

__all__ = [
    "CHUNK_SIZE",
    "USER_AGENT",
    "BearerAuth",
    "Operation",
    "RequestSpec",
    "T",
    "_aiter_file",
    "_iter_file",
    "_json_body",
    "_path_segment",
    "_retry_after",
    "_scrub",
    "build_request",
    "create_check_spec",
    "error_from_response",
    "file_spec",
    "http_options",
    "network_error",
    "normalise_products",
    "op_create_check",
    "op_create_upload",
    "op_delete_webhook",
    "op_get_check",
    "op_get_file",
    "op_get_webhook",
    "op_list_checks",
    "op_put_upload",
    "op_put_webhook",
    "op_rotate_webhook",
    "parse_check",
    "put_upload_spec",
    "resolve_config",
]
