"""``submit(document)``: choose how a document travels, validate it locally, send it.

Text goes as JSON; a file up to 4 MB as multipart; a larger one (up to 50 MB) through the
upload flow (create upload, PUT to the signed address, create check from the upload_id).
Anything the service would refuse for sure (too large, unsupported type, empty) is refused
here before any request, so a bad row costs neither money nor a waiting-upload slot.
Files are streamed from disk on every path: never read whole into memory. A file may also
live on an object store (a ``upath.UPath``, docs/storage.md): an upload is then streamed from
the store in blocks, and a multipart file (up to 4 MB) read whole, ahead of its request
(:func:`read_ahead`); its size is the one recorded (``FileDocument.size``), not asked again.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from doccheck.client import _core
from doccheck.client import assumptions as A
from doccheck.client._file_reads import CHUNK_SIZE, as_location, read_whole, remote_size, spooled, threaded
from doccheck.client._models import Check, Upload
from doccheck.errors import DocumentNotFound, DocumentTooLarge, EmptyDocument, UnsupportedDocument

if TYPE_CHECKING:
    from doccheck.storage import UserPath

Mode = Literal["text", "multipart", "upload"]


@dataclass(frozen=True)
class TextDocument:
    """Plain text sent as JSON."""

    text: str


@dataclass(frozen=True)
class FileDocument:
    """A file on disk or on an object store (a ``UPath``, or its URL); ``filename`` overrides
    the name sent to the service (its extension decides the type). ``size``: the file's size
    as planning or the store's listing recorded it (a remote file's is then not asked of its
    store; a local file is ``stat``'ed as ever). ``content``: its bytes, read already."""

    path: UserPath | str | os.PathLike[str]
    filename: str | None = None
    size: int | None = None
    content: bytes | None = dataclasses.field(default=None, repr=False)

    @functools.cached_property
    def location(self) -> UserPath:
        """``path`` as a location: a local ``Path`` or the file on its store (worked out once: a
        document's sending asks it half a dozen times, each a few microseconds for a store's file)."""
        return as_location(self.path)

    @functools.cached_property
    def name(self) -> str:
        if self.filename:
            return self.filename
        from doccheck.storage import file_name

        return file_name(self.location)


Document = TextDocument | FileDocument


@dataclass(frozen=True)
class Plan:
    """How a document will be sent; ``size`` and ``content_type`` only for files."""

    mode: Mode
    size: int | None = None
    content_type: str | None = None


@dataclass(frozen=True)
class Submission:
    """The result of ``submit``: the check, how it was sent, and the upload used (if any)."""

    check: Check
    mode: Mode
    upload_id: str | None = None

    @property
    def replayed(self) -> bool:
        """True when the service answered with an earlier check for the same key."""
        return self.check.replayed


def plan_document(document: Document) -> Plan:
    """The transport for ``document``, or a :class:`LocalValidationError` explaining why not.

    Pure apart from one ``stat`` of a local file (a remote one's size is ``document.size``, or
    one HEAD when nobody recorded it): the planner in the pipeline calls it for every row.
    """
    if isinstance(document, TextDocument):
        if not isinstance(document.text, str) or not document.text.strip():
            raise EmptyDocument("text is empty", code="invalid_input")
        return Plan("text")
    if not isinstance(document, FileDocument):
        raise TypeError(f"expected TextDocument or FileDocument, got {type(document).__name__}")
    path = document.location
    content_type = A.content_type_for(document.name)
    if content_type is None:
        raise UnsupportedDocument(
            f"unsupported file type for {document.name!r}: supported extensions are "
            f"{', '.join(sorted(A.SUPPORTED_TYPES))}",
            code="unsupported_file_type",
        )
    size = _size_of(document, path)
    if size == 0:
        raise EmptyDocument(f"file {document.name!r} is empty (0 bytes)", code="invalid_input")
    if size > A.UPLOAD_MAX_BYTES:
        raise DocumentTooLarge(
            f"file {document.name!r} is {size} bytes, over the {A.UPLOAD_MAX_BYTES} byte (50 MB) limit",
            code="file_too_large",
        )
    mode: Mode = "multipart" if size <= A.MULTIPART_MAX_BYTES else "upload"
    return Plan(mode, size=size, content_type=content_type)


def _size_of(document: FileDocument, path: UserPath) -> int:
    """The file's size: its bytes' when read, a local file's ``stat`` (which also finds it
    missing, as ever), a remote file's as recorded, else asked of its store."""
    if document.content is not None:
        return len(document.content)
    if not isinstance(path, Path):
        return document.size if document.size is not None else remote_size(path)
    try:
        stat = path.stat()
    except OSError as exc:
        raise DocumentNotFound(f"cannot read file {str(path)!r}: {exc.strerror or exc}", code="file_not_found") from exc
    if not path.is_file():
        raise DocumentNotFound(f"not a regular file: {str(path)!r}", code="file_not_found")
    return stat.st_size


async def read_ahead(document: Document) -> Document:
    """``document`` ready to send without waiting on its store: a remote file of the multipart
    size (up to 4 MB) with its bytes read, in a worker thread (one ranged read); any other
    document as it is (a local file is streamed from disk, an upload from its store in blocks).

    Why: the pipeline calls it before it takes a request slot, so the store's latency overlaps
    the service's requests instead of adding to each. A missing file raises
    ``DocumentNotFound`` (``file_not_found``), as a local one's ``stat`` does."""
    if not isinstance(document, FileDocument) or document.content is not None:
        return document
    path = document.location
    if isinstance(path, Path) or document.size is None or document.size > A.MULTIPART_MAX_BYTES:
        return document
    if document.size <= CHUNK_SIZE and (kept := spooled(path, document.size)) is not None:
        # In memory or on the local disk, no larger than one read of a local file: taken on the loop
        # as that is read (a worker thread's hand-off cost more than the read, for each essay of a term).
        return dataclasses.replace(document, content=kept)
    return dataclasses.replace(document, content=await threaded(read_whole, path, document.size))


def op_submit(
    document: Document,
    *,
    products: Sequence[str] | None,
    idempotency_key: str | None,
    name: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    webhook_url: str | None = None,
) -> _core.Operation[Submission]:
    """The submit flow as a sans-I/O operation (driven by the sync or async client).

    The Idempotency-Key goes on the final create-check only: uploads have no key, and the
    service binds the key to the stored bytes, so a re-submit after a crash that creates a
    fresh upload of the same file still gets the original check back without a charge.
    """
    plan = plan_document(document)
    products = _core.normalise_products(products, validate=True)
    common: dict[str, Any] = {
        "products": products,
        "name": name,
        "metadata": metadata,
        "webhook_url": webhook_url,
        "idempotency_key": idempotency_key,
    }
    if plan.mode == "text":
        assert isinstance(document, TextDocument)
        check = yield from _core.op_create_check(text=document.text, **common)
        return Submission(check, "text")
    assert isinstance(document, FileDocument)
    if plan.mode == "multipart":
        check = yield from _core.op_create_check(
            file=document.location,
            filename=document.name,
            file_bytes=document.content,
            file_size=plan.size,
            **common,
        )
        return Submission(check, "multipart")
    upload: Upload = yield from _core.op_create_upload(document.name, plan.content_type, plan.size)
    body = document.content if document.content is not None else document.location
    yield from _core.op_put_upload(upload, body, plan.size)
    check = yield from _core.op_create_check(upload_id=upload.upload_id, **common)
    return Submission(check, "upload", upload.upload_id)
