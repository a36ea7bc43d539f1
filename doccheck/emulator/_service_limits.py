"""Size limits of the interface and bounded body reading shared by API and storage origin."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from doccheck import domain

MB = 1024 * 1024
MULTIPART_FILE_LIMIT = domain.MULTIPART_MAX_BYTES
MULTIPART_OVERHEAD = 256 * 1024  # boundaries, headers and small fields around the file
UPLOAD_LIMIT = domain.UPLOAD_MAX_BYTES
JSON_BODY_LIMIT = 8 * MB
DRAIN_LIMIT = 64 * MB  # read-and-discard at most this much before answering 413
MAX_WAITING_UPLOADS = domain.MAX_WAITING_UPLOADS


class BodyTooLarge(Exception):
    """The body went over its limit while streaming."""


class BodyIncomplete(Exception):
    """The client went away (or was cut off by a read deadline) before the body ended:
    what arrived is a fragment and must not be used as if it were the whole body."""


async def drain(chunks: AsyncIterator[bytes], already: int = 0) -> None:
    """Read and DISCARD the rest of an oversize body (bounded), so that the client, which is
    still sending, gets to read our 413 instead of a connection reset."""
    seen = already
    try:
        async for chunk in chunks:
            seen += len(chunk)
            if seen > DRAIN_LIMIT:
                return
    except Exception:  # noqa: BLE001 - the client may hang up first; the 413 is still the answer
        return


async def body_chunks(receive: Any) -> AsyncIterator[bytes]:
    """Raw ASGI body chunks from ``receive`` until the body ends; :class:`BodyIncomplete`
    when the client leaves (or a read deadline cuts it off) first.

    Used instead of ``Request.stream()`` so that the remainder of an oversize body can be
    drained from the same channel after we stopped storing it.
    """
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BodyIncomplete
        chunk = message.get("body", b"")
        if chunk:
            yield chunk
        if not message.get("more_body", False):
            return


def ascii_int(value: str, max_digits: int = 18) -> int | None:
    """``int(value)`` for plain ASCII digits only (``str.isdigit`` also accepts '²')."""
    if 0 < len(value) <= max_digits and all("0" <= c <= "9" for c in value):
        return int(value)
    return None
