"""The storage origin: a second server that accepts the signed upload PUTs.

It is a bare ASGI app, not FastAPI, because it must control the body stream itself: the
upload is counted chunk by chunk and refused with 413 as soon as it passes the declared
size or 50 MB, so no more than the limit is ever held in memory. The URL is signed with
HMAC-SHA256 over ``upload_id.expires`` under a per-process secret; expiry is checked on
the emulator's virtual clock, so a test can advance past 600 s.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from doccheck.emulator._api_errors import error_body
from doccheck.emulator._clock import iso
from doccheck.emulator._service_limits import DRAIN_LIMIT, UPLOAD_LIMIT, BodyIncomplete, ascii_int, body_chunks, drain
from doccheck.emulator._store import Upload

if TYPE_CHECKING:
    from doccheck.emulator._runtime import Emulator


def sign_upload(secret: bytes, upload_id: str, expires: int) -> str:
    """Hex HMAC of ``<upload_id>.<expires>`` under the storage secret."""
    return hmac.new(secret, f"{upload_id}.{expires}".encode(), hashlib.sha256).hexdigest()


def upload_url(emu: Emulator, upload: Upload) -> str:
    """The signed PUT address of ``upload`` on the storage origin."""
    expires = math.ceil(upload.expires_at)
    sig = sign_upload(emu.upload_secret, upload.id, expires)
    return f"{emu.config.storage_url}/uploads/{upload.id}?expires={expires}&sig={sig}"


class StorageOrigin:
    """ASGI app: ``PUT /uploads/{upload_id}?expires=..&sig=..``."""

    def __init__(self, emu: Emulator) -> None:
        self.emu = emu

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        request_id = "req_" + uuid.uuid4().hex[:24]
        status, code, message, extra = await self._handle(scope, receive)
        if code is None:
            body = json.dumps(extra).encode()
        else:
            body = json.dumps(error_body(code, message, request_id)).encode()
        await send({
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"x-request-id", request_id.encode()),
            ],
        })  # fmt: skip
        await send({"type": "http.response.body", "body": body})

    async def _handle(self, scope: dict[str, Any], receive: Any) -> tuple[int, str | None, str, dict[str, Any]]:
        path: str = scope.get("path", "")
        parts = path.strip("/").split("/")
        if len(parts) != 2 or parts[0] != "uploads":
            return 404, "not_found", "no such storage object", {}
        if scope.get("method") != "PUT":
            return 405, "method_not_allowed", "only PUT is accepted on upload addresses", {}
        upload_id = parts[1]
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        expires_raw = (query.get("expires") or [""])[0]
        sig = (query.get("sig") or [""])[0]
        expires = ascii_int(expires_raw)
        if expires is None or not sig:
            return 403, "invalid_signature", "the upload address is not signed", {}
        expected = sign_upload(self.emu.upload_secret, upload_id, expires)
        if not hmac.compare_digest(expected, sig):
            return 403, "invalid_signature", "the upload address signature does not match", {}
        if self.emu.clock.now() > expires:
            return 403, "upload_url_expired", "the signed upload address has expired (valid 600 s)", {}
        upload = self._find(upload_id)
        if upload is None or upload.status == "deleted":
            return 404, "upload_not_found", "the upload does not exist or was deleted", {}
        if upload.status == "consumed":
            return 409, "upload_consumed", "a check was already made from this upload; its bytes are final", {}
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        sent_type = headers.get("content-type", "").strip()
        if sent_type != upload.content_type:
            return 415, "content_type_mismatch", f"Content-Type must be exactly {upload.content_type!r}", {}
        limit = min(upload.size_bytes if upload.size_bytes is not None else UPLOAD_LIMIT, UPLOAD_LIMIT)
        chunks = body_chunks(receive)
        declared = ascii_int(headers.get("content-length", ""))
        if declared is not None and declared > limit:
            if declared <= DRAIN_LIMIT:
                await drain(chunks)
            return 413, "file_too_large", f"the upload is larger than its limit of {limit} bytes", {}
        data = bytearray()
        try:
            async for chunk in chunks:
                if len(data) + len(chunk) > limit:
                    await drain(chunks, len(data) + len(chunk))
                    return 413, "file_too_large", f"the upload is larger than its limit of {limit} bytes", {}
                data.extend(chunk)
        except BodyIncomplete:  # a fragment is never stored as the upload's bytes
            return 400, "body_incomplete", "the upload body ended before its end; nothing was stored", {}
        # The upload may have been consumed or deleted while the body streamed in.
        if upload.status != "waiting":
            return 409, "upload_consumed", "the upload is no longer waiting for bytes", {}
        upload.data = bytes(data)
        upload.sha256 = hashlib.sha256(upload.data).hexdigest()
        return (
            200,
            None,
            "",
            {
                "object": "upload",
                "upload_id": upload.id,
                "size_bytes": len(upload.data),
                "status": "uploaded",
                "received_at": iso(self.emu.clock.now()),
            },
        )

    def _find(self, upload_id: str) -> Upload | None:
        return self.emu.store.uploads_by_id.get(upload_id)
