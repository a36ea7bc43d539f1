"""The requests that send one document to the service, and the request slots they hold.

Why apart from :mod:`doccheck.pipeline.sending._submitter`: the submitter decides whether, when and
under which claim a document is sent and what its answer or refusal means; this is how one send
goes, by mode (text: one JSON request, a file's text read first; multipart: one request with the
file; upload: the upload created and its id recorded before the bytes travel, then the check). Each
create-check request is preceded by its ``sending`` mark in the ledger (docs/ledger.md's order),
written on the submitter's ledger thread, and refused when the key's claim was lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from anyio import to_thread

from doccheck.client import (
    AsyncDocCheckClient,
    Check,
    ConflictError,
    DocCheckError,
    NotFoundError,
    TextDocument,
    Upload,
    UploadExpiredError,
    plan_document,
    read_ahead,
)
from doccheck.errors import ClaimLost
from doccheck.extract import ExtractionError, extract_text
from doccheck.ledger import Ledger
from doccheck.pipeline.sending._document_files import (
    file_document,
    file_of,
    put_file,
    read_for_text,
    recorded_size,
)
from doccheck.pipeline.sending._ledger_writer import LedgerWriter
from doccheck.pipeline.sending._reconcile import with_reference
from doccheck.sources.manifest import JSON_BODY_MAX_BYTES, JSON_BODY_RESERVE_BYTES

__all__ = ["DocumentRequests", "text_of_file"]

log = logging.getLogger(__name__)

#: Codes by which a stored upload_id can no longer make a check: start a fresh upload.
_STALE_UPLOAD_CODES = {"upload_not_found", "upload_incomplete", "upload_consumed"}


class DocumentRequests:
    """One batch's requests: the ``concurrency`` request slots, the upload slots, the uploads it
    created, and the send of one document in its mode."""

    def __init__(
        self,
        client: AsyncDocCheckClient,
        ledger: Ledger,
        writer: LedgerWriter,
        *,
        owner: str,
        webhook_url: str | None,
        concurrency: int,
        upload_concurrency: int,
        on_idle: Callable[[], None],
    ) -> None:
        self.client = client
        self.ledger = ledger
        self.writer = writer
        self.owner = owner
        self.webhook_url = webhook_url
        #: Requests in flight at the service (``concurrency``): held around the requests only.
        self.sem = asyncio.Semaphore(max(1, concurrency))
        self.in_flight = 0  # requests at the service now (``slot``)
        self.upload_sem = asyncio.Semaphore(max(1, min(upload_concurrency, concurrency)))
        #: Uploads this batch created, by key: a requeue after a failed PUT sends the bytes
        #: to the same upload (while its address is valid) instead of taking another slot.
        self.uploads: dict[str, Upload] = {}
        self._on_idle = on_idle  # the last request in flight ended

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """One of the ``concurrency`` request slots, counted in ``in_flight`` (a ledger round
        stops waiting for more documents once no request is left to bring any)."""
        async with self.sem:
            self.in_flight += 1
            try:
                yield
            finally:
                self.in_flight -= 1
                if not self.in_flight:
                    self._on_idle()

    async def _sending(self, doc: Any) -> None:
        """Record, before a create-check request, that it may reach the service; refuse to
        send a key whose claim was lost (a stalled process whose lease expired)."""
        if not await self.writer.call(self.ledger.mark_sending, doc.idempotency_key, self.owner):
            raise ClaimLost(doc.idempotency_key)

    def _common(self, doc: Any) -> dict[str, Any]:
        return {
            "products": list(doc.products),
            "name": doc.name,
            "metadata": with_reference(dict(doc.metadata or {}), doc.idempotency_key),
            "webhook_url": self.webhook_url,
            "idempotency_key": doc.idempotency_key,
        }

    async def send(self, doc: Any, previous_upload_id: str | None, *, marked: bool = False) -> tuple[Check, str | None]:
        """``marked``: ``sending`` is already recorded (grouped with ``submitting``)."""
        if doc.mode == "text":
            text = doc.text if doc.text is not None else await text_of_file(doc)
            if not marked:
                await self._sending(doc)
            async with self.slot():
                sub = await self.client.submit(TextDocument(text), **self._common(doc))
            return sub.check, None
        if doc.path is None:
            raise DocCheckError(f"a {doc.mode}-mode document has no path", code="invalid_input")
        if doc.mode == "multipart":
            document = await read_ahead(file_document(doc))  # a remote file's bytes: read before its slot
            if not marked:
                await self._sending(doc)
            async with self.slot():
                sub = await self.client.submit(document, **self._common(doc))
            return sub.check, sub.upload_id
        async with self.slot():  # several requests and ledger writes, in order, in one slot (as before)
            return await self._send_upload(doc, previous_upload_id)

    async def _send_upload(self, doc: Any, previous_upload_id: str | None) -> tuple[Check, str | None]:
        """The upload flow step by step, so the upload id is in the ledger before the bytes
        travel: a resume first tries that upload (the service replays the key if the check
        exists) instead of taking another waiting-upload slot."""
        common = self._common(doc)
        if previous_upload_id:
            try:
                await self._sending(doc)
                check = await self.client.create_check(upload_id=previous_upload_id, **common)
                return check, previous_upload_id
            except (NotFoundError, ConflictError) as exc:
                if exc.code not in _STALE_UPLOAD_CODES:
                    raise
                resumed = await self._finish_own_upload(doc, previous_upload_id, exc.code)
                if resumed is not None:
                    return resumed, previous_upload_id
                log.debug("stored upload of %s is unusable (%s); uploading again", doc.document_id, exc.code)
        path = file_of(doc)
        plan = plan_document(file_document(doc))  # local refusal before taking a slot
        async with self.upload_sem:
            upload = await self.client.create_upload(path.name, content_type=plan.content_type, size_bytes=plan.size)
            await self.writer.call(self.ledger.mark_upload_created, doc.idempotency_key, upload.upload_id)
            self.uploads[doc.idempotency_key] = upload
            await put_file(self.client, upload, path, plan.size)  # a remote file: streamed in blocks
            await self._sending(doc)
            check = await self.client.create_check(upload_id=upload.upload_id, **common)
        self.uploads.pop(doc.idempotency_key, None)
        return check, upload.upload_id

    async def _finish_own_upload(self, doc: Any, upload_id: str, code: str | None) -> Check | None:
        """After ``upload_incomplete`` for an upload this batch created (its PUT failed
        and the document was requeued): PUT the bytes again to the same signed address
        and create the check, so the upload's waiting slot is used, not leaked. None when
        that is not possible (not ours, or the address expired): upload afresh."""
        upload = self.uploads.get(doc.idempotency_key)
        if code != "upload_incomplete" or upload is None or upload.upload_id != upload_id:
            return None
        try:
            async with self.upload_sem:
                await put_file(self.client, upload, file_of(doc), recorded_size(doc))
                await self._sending(doc)
                check = await self.client.create_check(upload_id=upload_id, **self._common(doc))
        except UploadExpiredError:
            self.uploads.pop(doc.idempotency_key, None)
            return None
        self.uploads.pop(doc.idempotency_key, None)
        return check


async def text_of_file(doc: Any) -> str:
    """The text of a file sent as text: read as planning read it (same bounded extractor, so the
    same words are billed), off the event loop, before anything is recorded as sending."""
    if doc.path is None:
        raise DocCheckError("a text-mode document has no text", code="invalid_input")
    path, size = file_of(doc), recorded_size(doc)
    try:  # in anyio's threads: asyncio's six would queue a term's remote reads (_document_files)
        text = await to_thread.run_sync(lambda: extract_text(read_for_text(path, size), path.name))
    except ExtractionError as exc:
        raise DocCheckError(f"cannot read {doc.name!r} as text: {exc}", code="file_unreadable") from None
    body = len(json.dumps(text, ensure_ascii=False).encode("utf-8"))
    if body + JSON_BODY_RESERVE_BYTES > JSON_BODY_MAX_BYTES:  # refused here, as a text row is when planned
        raise DocCheckError(
            f"the service does not take this file's type, and its text ({body:,} bytes of JSON) is over the "
            f"service's {JSON_BODY_MAX_BYTES:,} byte limit for a JSON body: not sent",
            code="text_too_large",
        )
    return text
