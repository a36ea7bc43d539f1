"""``submit(document)``: choose how a document travels, validate it locally, send it.

Text goes as JSON; a file up to 4 MB as multipart; a larger one (up to 50 MB) through the
upload flow (create upload, PUT to the signed address, create check from the upload_id).
Anything the service would refuse for sure (too large, unsupported type, empty) is refused
here before any request, so a bad row costs neither money nor a waiting-upload slot.
Files are streamed from disk on every path: never read whole into memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from doccheck.client import _core
from doccheck.client import assumptions as A
from doccheck.client._models import Check, Upload
from doccheck.errors import DocumentNotFound, DocumentTooLarge, EmptyDocument, UnsupportedDocument

Mode = Literal["text", "multipart", "upload"]


@dataclass(frozen=True)
class TextDocument:
    """Plain text sent as JSON."""

    text: str


@dataclass(frozen=True)
class FileDocument:
    """A file on disk; ``filename`` overrides the name sent to the service (its extension
    decides the type)."""

    path: Path | str
    filename: str | None = None

    @property
    def name(self) -> str:
        return self.filename or Path(self.path).name


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

    Pure apart from one ``stat``: the planner in the pipeline calls it for every manifest row.
    """
    if isinstance(document, TextDocument):
        if not isinstance(document.text, str) or not document.text.strip():
            raise EmptyDocument("text is empty", code="invalid_input")
        return Plan("text")
    if not isinstance(document, FileDocument):
        raise TypeError(f"expected TextDocument or FileDocument, got {type(document).__name__}")
    path = Path(document.path)
    content_type = A.content_type_for(document.name)
    if content_type is None:
        raise UnsupportedDocument(
            f"unsupported file type for {document.name!r}: supported extensions are "
            f"{', '.join(sorted(A.SUPPORTED_TYPES))}",
            code="unsupported_file_type",
        )
    try:
        stat = path.stat()
    except OSError as exc:
        raise DocumentNotFound(f"cannot read file {str(path)!r}: {exc.strerror or exc}", code="file_not_found") from exc
    if not path.is_file():
        raise DocumentNotFound(f"not a regular file: {str(path)!r}", code="file_not_found")
    size = stat.st_size
    if size == 0:
        raise EmptyDocument(f"file {document.name!r} is empty (0 bytes)", code="invalid_input")
    if size > A.UPLOAD_MAX_BYTES:
        raise DocumentTooLarge(
            f"file {document.name!r} is {size} bytes, over the {A.UPLOAD_MAX_BYTES} byte (50 MB) limit",
            code="file_too_large",
        )
    mode: Mode = "multipart" if size <= A.MULTIPART_MAX_BYTES else "upload"
    return Plan(mode, size=size, content_type=content_type)


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
        check = yield from _core.op_create_check(file=document.path, filename=document.name, **common)
        return Submission(check, "multipart")
    upload: Upload = yield from _core.op_create_upload(document.name, plan.content_type, plan.size)
    yield from _core.op_put_upload(upload, Path(document.path))
    check = yield from _core.op_create_check(upload_id=upload.upload_id, **common)
    return Submission(check, "upload", upload.upload_id)
