"""submit(): local validation before any request, and the path chosen per document."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from doccheck.client import (
    AsyncDocCheckClient,
    DocCheckClient,
    DocumentNotFound,
    DocumentTooLarge,
    EmptyDocument,
    FileDocument,
    RetryPolicy,
    TextDocument,
    UnsupportedDocument,
    plan_document,
)
from doccheck.client.assumptions import MULTIPART_MAX_BYTES, UPLOAD_MAX_BYTES
from tests.factories import BASE, CHECK, KEY, Recorder, created

UPLOAD = {
    "object": "upload",
    "upload_id": "up_1",
    "upload_url": "http://storage.test/uploads/up_1?sig=s",
    "expires_in": 600,
    "content_type": "text/plain",
    "instructions": "PUT the bytes",
}


def sized(path: Path, size: int) -> Path:
    with path.open("wb") as fh:  # sparse: no memory, almost no disk
        fh.truncate(size)
    return path


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        (TextDocument(""), EmptyDocument),
        (TextDocument("  \n\t"), EmptyDocument),
        (FileDocument("/nonexistent/x.txt"), DocumentNotFound),
    ],
)
def test_local_errors_before_any_request(doc: object, error: type[Exception]) -> None:
    rec = Recorder(created())
    with pytest.raises(error):
        DocCheckClient(BASE, KEY, transport=httpx.MockTransport(rec)).submit(doc, idempotency_key="k")  # type: ignore[arg-type]
    assert rec.requests == []


def test_file_local_errors(tmp_path: Path) -> None:
    rec = Recorder(created())
    client = DocCheckClient(BASE, KEY, transport=httpx.MockTransport(rec))
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "x.exe").write_bytes(b"MZ")
    (tmp_path / "noext").write_bytes(b"a")
    sized(tmp_path / "huge.pdf", UPLOAD_MAX_BYTES + 1)
    (tmp_path / "dir.txt").mkdir()
    with pytest.raises(EmptyDocument, match="empty.txt"):
        client.submit(FileDocument(tmp_path / "empty.txt"))
    with pytest.raises(UnsupportedDocument, match="x.exe") as info:
        client.submit(FileDocument(tmp_path / "x.exe"))
    assert ".pdf" in str(info.value)
    with pytest.raises(UnsupportedDocument):
        client.submit(FileDocument(tmp_path / "noext"))
    with pytest.raises(DocumentTooLarge, match="huge.pdf"):
        client.submit(FileDocument(tmp_path / "huge.pdf"))
    with pytest.raises(DocumentNotFound):
        client.submit(FileDocument(tmp_path / "dir.txt"))
    assert rec.requests == []


def test_plan_thresholds(tmp_path: Path) -> None:
    assert plan_document(TextDocument("hi")).mode == "text"
    assert plan_document(FileDocument(sized(tmp_path / "a.txt", 1))).mode == "multipart"
    assert plan_document(FileDocument(sized(tmp_path / "b.txt", MULTIPART_MAX_BYTES))).mode == "multipart"
    p = plan_document(FileDocument(sized(tmp_path / "c.PDF", MULTIPART_MAX_BYTES + 1)))
    assert (p.mode, p.size, p.content_type) == ("upload", MULTIPART_MAX_BYTES + 1, "application/pdf")
    assert plan_document(FileDocument(sized(tmp_path / "d.docx", UPLOAD_MAX_BYTES))).mode == "upload"
    # the filename override decides the type (a manifest may point at a content-addressed path)
    assert plan_document(FileDocument(sized(tmp_path / "blob", 5), filename="essay.html")).content_type == "text/html"


def test_submit_text() -> None:
    rec = Recorder(created())
    sub = DocCheckClient(BASE, KEY, transport=httpx.MockTransport(rec)).submit(
        TextDocument("some words"), products=["similarity"], idempotency_key="k", metadata={"row": 3}
    )
    assert sub.mode == "text" and sub.upload_id is None and sub.check.id == CHECK["id"]
    assert json.loads(rec.bodies[0])["products"] == ["similarity"]
    assert rec.requests[0].headers["Idempotency-Key"] == "k"


def test_submit_small_file_is_multipart(tmp_path: Path) -> None:
    doc = tmp_path / "a.txt"
    doc.write_text("hello world")
    rec = Recorder(created())
    sub = DocCheckClient(BASE, KEY, transport=httpx.MockTransport(rec)).submit(
        FileDocument(doc), products=["ai", "similarity"], idempotency_key="k"
    )
    assert sub.mode == "multipart"
    assert rec.requests[0].headers["Content-Type"].startswith("multipart/form-data")
    assert rec.bodies[0].count(b'name="products"') == 2


def _upload_flow_client(api: Recorder, storage: Recorder, async_: bool = False):
    cls = AsyncDocCheckClient if async_ else DocCheckClient
    return cls(
        BASE,
        KEY,
        retry=RetryPolicy(max_attempts=1),
        transport=httpx.MockTransport(api),
        upload_transport=httpx.MockTransport(storage),
    )


def test_submit_large_file_uses_upload_flow(tmp_path: Path) -> None:
    doc = tmp_path / "big.txt"
    doc.write_bytes(b"lorem ipsum " * (MULTIPART_MAX_BYTES // 12 + 100))
    api = Recorder(httpx.Response(201, json=UPLOAD), created())
    storage = Recorder(httpx.Response(200))
    sub = _upload_flow_client(api, storage).submit(FileDocument(doc), products=["ai"], idempotency_key="key-1")
    assert (sub.mode, sub.upload_id) == ("upload", "up_1")
    create_upload, create_check = api.requests
    assert create_upload.url.path == "/api/v1/uploads" and "Idempotency-Key" not in create_upload.headers
    assert json.loads(api.bodies[0]) == {
        "filename": "big.txt",
        "content_type": "text/plain",
        "size_bytes": doc.stat().st_size,
    }
    put = storage.requests[0]
    assert put.method == "PUT" and "Authorization" not in put.headers and put.headers["Content-Type"] == "text/plain"
    assert storage.bodies[0] == doc.read_bytes()
    assert create_check.headers["Idempotency-Key"] == "key-1"
    assert json.loads(api.bodies[1]) == {"upload_id": "up_1", "products": ["ai"]}


def test_async_submit_upload_flow_streams(tmp_path: Path) -> None:
    doc = tmp_path / "big.md"
    doc.write_bytes(b"# x\n" + b"word " * (MULTIPART_MAX_BYTES // 5 + 10))
    api = Recorder(httpx.Response(201, json=dict(UPLOAD, content_type="text/markdown")), created())
    storage = Recorder(httpx.Response(200))

    async def main():
        async with _upload_flow_client(api, storage, async_=True) as c:
            return await c.submit(FileDocument(doc), idempotency_key="k2")

    sub = asyncio.run(main())
    assert sub.mode == "upload" and storage.bodies[0] == doc.read_bytes()
    assert storage.requests[0].headers["Content-Type"] == "text/markdown"
    assert storage.requests[0].headers["Content-Length"] == str(doc.stat().st_size)
