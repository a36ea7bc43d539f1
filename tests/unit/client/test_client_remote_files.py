"""A document on an object store (a ``memory://`` UPath standing for ``s3://``): sent as a local
file is, its size the one recorded (no HEAD), a multipart file read whole off the event loop,
an upload streamed in the seam's blocks, a missing file refused in a local one's words."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from doccheck.client import (
    AsyncDocCheckClient,
    DocCheckClient,
    DocumentNotFound,
    FileDocument,
    RetryPolicy,
    Upload,
    plan_document,
    read_ahead,
)
from doccheck.client.assumptions import MULTIPART_MAX_BYTES
from doccheck.errors import StorageError
from doccheck.storage import BLOCK_BYTES, resolve
from tests.factories import BASE, KEY, Recorder, created
from tests.fixtures.memory_bucket import Requests

UPLOAD = {
    "upload_id": "up_9",
    "upload_url": "http://storage.test/uploads/up_9?sig=s",
    "expires_in": 600,
    "content_type": "text/plain",
}


@pytest.fixture
def heads(memory_store: MemoryFileSystem, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths whose details were asked of the store (a HEAD on S3)."""
    asked: list[str] = []
    original = MemoryFileSystem.info

    def info(self: MemoryFileSystem, path: str, **kw: Any) -> Any:
        asked.append(path)
        return original(self, path, **kw)

    monkeypatch.setattr(MemoryFileSystem, "info", info)
    return asked


def _clients(api: Recorder, storage: Recorder) -> dict[str, Any]:
    return {
        "base_url": BASE,
        "api_key": KEY,
        "retry": RetryPolicy(max_attempts=1),
        "transport": httpx.MockTransport(api),
        "upload_transport": httpx.MockTransport(storage),
    }


def test_a_recorded_size_plans_a_remote_file_with_no_head(memory_store: MemoryFileSystem, heads: list[str]) -> None:
    memory_store.pipe_file("/term/a/essay.pdf", b"%PDF" + b"x" * 100)
    remote = resolve("memory://term/a/essay.pdf")
    plan = plan_document(FileDocument(remote, size=104))
    assert (plan.mode, plan.size, plan.content_type) == ("multipart", 104, "application/pdf")
    assert heads == []
    assert plan_document(FileDocument("memory://term/a/essay.pdf")).size == 104  # nobody recorded it: one HEAD
    assert len(heads) == 1


def test_a_remote_multipart_file_is_sent_whole(memory_store: MemoryFileSystem, heads: list[str]) -> None:
    memory_store.pipe_file("/term/a/essay.txt", b"rivers carry sediment")
    api = Recorder(created())
    sub = DocCheckClient(**_clients(api, Recorder(httpx.Response(200)))).submit(
        FileDocument(resolve("memory://term/a/essay.txt"), size=21), idempotency_key="key-7"
    )
    assert sub.mode == "multipart" and b"rivers carry sediment" in api.bodies[0]
    assert b'filename="essay.txt"' in api.bodies[0] and api.requests[0].headers["Idempotency-Key"] == "key-7"
    assert heads == []


def test_read_ahead_reads_a_small_remote_file_in_a_worker_thread(
    memory_store: MemoryFileSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_store.pipe_file("/term/a/small.txt", b"abc")
    memory_store.pipe_file("/term/a/large.txt", b"x" * (MULTIPART_MAX_BYTES + 1))
    readers: list[int] = []
    original = MemoryFileSystem._open

    def opened(self: MemoryFileSystem, path: str, *a: Any, **kw: Any) -> Any:
        readers.append(threading.get_ident())
        return original(self, path, *a, **kw)

    monkeypatch.setattr(MemoryFileSystem, "_open", opened)
    small = FileDocument(resolve("memory://term/a/small.txt"), size=3)
    large = FileDocument(resolve("memory://term/a/large.txt"), size=MULTIPART_MAX_BYTES + 1)
    read = asyncio.run(read_ahead(small))
    assert isinstance(read, FileDocument) and read.content == b"abc"
    assert readers and threading.get_ident() not in readers  # off the event loop's thread
    assert asyncio.run(read_ahead(large)) is large  # an upload: streamed when it is sent


def test_a_remote_upload_is_streamed_with_its_recorded_length(memory_store: MemoryFileSystem, heads: list[str]) -> None:
    data = bytes(range(256)) * ((MULTIPART_MAX_BYTES + 3 * BLOCK_BYTES) // 256)
    memory_store.pipe_file("/term/a/big.txt", data)
    api, storage = Recorder(httpx.Response(201, json=UPLOAD), created()), Recorder(httpx.Response(200))
    doc = FileDocument(resolve("memory://term/a/big.txt"), size=len(data))

    async def send() -> Any:
        async with AsyncDocCheckClient(**_clients(api, storage)) as client:
            return await client.submit(doc, idempotency_key="key-8")

    sub = asyncio.run(send())
    assert (sub.mode, sub.upload_id) == ("upload", "up_9")
    assert json.loads(api.bodies[0])["size_bytes"] == len(data)
    assert storage.requests[0].headers["Content-Length"] == str(len(data)) and storage.bodies[0] == data
    assert api.requests[1].headers["Idempotency-Key"] == "key-8" and heads == []
    again = Recorder(httpx.Response(200))
    DocCheckClient(**_clients(api, again)).put_upload(Upload.model_validate(UPLOAD), doc.location, size=len(data))
    assert again.bodies[0] == data  # the sync client streams it too


def test_a_missing_remote_file_is_refused_before_any_request(memory_store: MemoryFileSystem) -> None:
    api = Recorder(created())
    gone = FileDocument(resolve("memory://term/a/gone.txt"), size=10)
    with pytest.raises(DocumentNotFound) as refused:
        DocCheckClient(**_clients(api, Recorder(httpx.Response(200)))).submit(gone, idempotency_key="k")
    assert refused.value.code == "file_not_found"
    assert "cannot read file 'memory://term/a/gone.txt': No such file or directory" in refused.value.message
    assert api.requests == []
    with pytest.raises(DocumentNotFound):
        asyncio.run(read_ahead(gone))


def test_a_remote_upload_shorter_than_recorded_is_not_sent_short(memory_store: MemoryFileSystem) -> None:
    memory_store.pipe_file("/term/a/big.txt", b"x" * (MULTIPART_MAX_BYTES + 10))
    storage = Recorder(httpx.Response(200))

    async def put() -> None:
        async with AsyncDocCheckClient(**_clients(Recorder(created()), storage)) as client:
            await client.put_upload(
                Upload.model_validate(UPLOAD), resolve("memory://term/a/big.txt"), size=MULTIPART_MAX_BYTES + 99
            )

    with pytest.raises(StorageError, match="changed since"):
        asyncio.run(put())
    assert storage.requests == []  # the PUT's body never completed


def test_the_senders_read_ahead_takes_a_small_spooled_file_on_the_loop(
    bucket: tuple[MemoryFileSystem, Requests], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An essay planning kept is read from the spool where the request is made (a local file as
    small as one read of a local one), not handed to a worker thread; a larger one still is."""
    from doccheck.client import FileDocument
    from doccheck.client import _submit as submit
    from doccheck.storage import spool, spooling

    fs, requests = bucket
    big = b"w " * 40_000  # over one local read (64 KiB)
    fs.pipe({"/t/a/x.txt": b"planned words", "/t/a/big.txt": big})
    small, large = resolve("memory://t/a/x.txt"), resolve("memory://t/a/big.txt")
    handed: list[object] = []

    async def threaded(fn: object, *args: object) -> object:
        handed.append(args[0])
        return fn(*args)  # type: ignore[operator]

    monkeypatch.setattr(submit, "threaded", threaded)
    with spooling():
        spool(small, b"planned words")
        spool(large, big)
        read = asyncio.run(submit.read_ahead(FileDocument(small, size=13)))
        assert isinstance(read, FileDocument) and read.content == b"planned words" and handed == []
        read = asyncio.run(submit.read_ahead(FileDocument(large, size=len(big))))
        assert isinstance(read, FileDocument) and read.content == big and handed == [large]
    assert not requests.gets  # both from the spool
