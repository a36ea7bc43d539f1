"""``POST /uploads``: a signed PUT address on the storage origin; uploading never charges."""

from __future__ import annotations

import re
import uuid

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from doccheck.emulator._api_errors import ApiError, invalid_input, too_large
from doccheck.emulator._bearer_auth import authenticate, emulator_of
from doccheck.emulator._inputs import optional_str, read_json_object
from doccheck.emulator._openapi_docs import CREATE_UPLOAD_BODY, ERROR_RESPONSES
from doccheck.emulator._service_limits import MAX_WAITING_UPLOADS, UPLOAD_LIMIT
from doccheck.emulator._storage_origin import upload_url
from doccheck.emulator._store import Account, Upload
from doccheck.extract import content_type_for, extension_of

router = APIRouter()
_MIME = re.compile(r"^[A-Za-z0-9][\w.+-]*/[A-Za-z0-9][\w.+-]*(\s*;\s*[\w.+-]+=[\w.+\-\"]+)*$")


def _delete_if_unused(account: Account, upload: Upload) -> None:
    """The 24-hour rule: a still-waiting upload is deleted and frees its slot."""
    if upload.status == "waiting":
        upload.status = "deleted"
        upload.data = None


@router.post("/uploads", status_code=201, openapi_extra=CREATE_UPLOAD_BODY, responses=ERROR_RESPONSES)
async def create_upload(request: Request) -> Response:
    """Reserve an upload slot and return its signed address (valid 600 s)."""
    emu = emulator_of(request)
    account = authenticate(request)
    body = await read_json_object(request, limit=64 * 1024)
    filename = optional_str(body.get("filename"), "filename", 255)
    if not filename or not filename.strip():
        raise invalid_input("field 'filename' is required (with the real extension)")
    ctype = optional_str(body.get("content_type"), "content_type", 255)
    size = body.get("size_bytes")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
        raise invalid_input("field 'size_bytes' must be an integer")
    if size is not None and size < 0:
        raise invalid_input("field 'size_bytes' must not be negative")
    inferred = content_type_for(filename)
    if inferred is None:
        ext = extension_of(filename) or "(no extension)"
        raise ApiError(415, "unsupported_file_type", f"unsupported file type {ext!r} in 'filename'")
    if ctype is not None and not _MIME.match(ctype.strip()):
        raise invalid_input("field 'content_type' is not a MIME type like 'application/pdf'")
    if size is not None and size > UPLOAD_LIMIT:
        raise too_large(f"size_bytes {size} is over the 50 MB upload limit")
    if account.waiting_uploads() >= MAX_WAITING_UPLOADS:
        raise ApiError(409, "too_many_uploads",
                       f"{MAX_WAITING_UPLOADS} uploads are already waiting; use or let them expire (24 h)")  # fmt: skip
    now = emu.clock.now()
    upload = Upload(
        id=str(uuid.uuid4()),
        filename=filename.strip(),
        content_type=(ctype or inferred).strip(),
        size_bytes=size,
        created_at=now,
        expires_at=now + emu.config.upload_url_ttl_s,
    )
    account.uploads[upload.id] = upload
    emu.store.uploads_by_id[upload.id] = upload
    emu.scheduler.at(now + emu.config.upload_retention_s, lambda: _delete_if_unused(account, upload), "upload gc")
    return JSONResponse(
        {
            "object": "upload",
            "upload_id": upload.id,
            "upload_url": upload_url(emu, upload),
            "expires_in": emu.config.upload_url_ttl_s,
            "content_type": upload.content_type,
            "instructions": (
                f"PUT the raw file bytes to upload_url within {emu.config.upload_url_ttl_s} seconds with the header "
                f"'Content-Type: {upload.content_type}', then POST /checks with this upload_id. "
                "The upload_id works once; unused uploads are deleted after 24 hours."
            ),
        },
        status_code=201,
    )
