"""Documents whose files are on an object store (``memory://`` UPaths standing for ``s3://``),
sent by ``submit_batch`` through the real async client: an upload streamed in the seam's
blocks and never held whole, a multipart file read ahead of its request slot (reads overlap),
a file sent as its text through a bounded copy, a file deleted before sending reported as a
local one is, and the Idempotency-Key the one planning made, wherever the file lives."""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from doccheck.client import AsyncDocCheckClient, RetryPolicy
from doccheck.client.assumptions import MULTIPART_MAX_BYTES
from doccheck.ledger import Ledger
from doccheck.pipeline import SubmitOptions, submit_batch
from doccheck.storage import BLOCK_BYTES, resolve
from tests import generated_documents as gen
from tests.factories import BASE, KEY, Recorder, created, planned
from tests.fakes import FakeClient, run

UPLOAD = {"upload_id": "up_1", "upload_url": "http://storage.test/u/up_1?sig=s", "content_type": "text/plain"}


class _Sink(httpx.AsyncBaseTransport):
    """The signed upload address: takes the PUT's body block by block, keeping its length and hash only."""

    def __init__(self) -> None:
        self.length, self.digest, self.puts = 0, hashlib.sha256(), 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.puts += 1
        async for chunk in request.stream:  # type: ignore[union-attr]
            self.length += len(chunk)
            self.digest.update(chunk)
        return httpx.Response(200)


class _Reads:
    """A file of the memory store whose reads are recorded (their sizes, how many at once)."""

    active = 0
    most = 0
    lock = threading.Lock()

    def __init__(self, inner: Any, sizes: list[int], delay: float) -> None:
        self.inner, self.sizes, self.delay = inner, sizes, delay

    def read(self, n: int = -1) -> bytes:
        with self.lock:
            _Reads.active += 1
            _Reads.most = max(_Reads.most, _Reads.active)
        try:
            time.sleep(self.delay)  # the store's latency, in the reading thread
            data: bytes = self.inner.read(n)
        finally:
            with self.lock:
                _Reads.active -= 1
        self.sizes.append(len(data))
        return data

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> _Reads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture
def reads(memory_store: MemoryFileSystem, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every read of the memory store, by size; ``delay`` makes each read take that long."""
    seen: dict[str, Any] = {"sizes": [], "delay": 0.0}
    original = MemoryFileSystem._open
    _Reads.active = _Reads.most = 0

    def opened(self: MemoryFileSystem, path: str, *a: Any, **kw: Any) -> Any:
        return _Reads(original(self, path, *a, **kw), seen["sizes"], seen["delay"])

    monkeypatch.setattr(MemoryFileSystem, "_open", opened)
    return seen


def _client(api: Recorder, storage: httpx.AsyncBaseTransport) -> AsyncDocCheckClient:
    return AsyncDocCheckClient(
        BASE, KEY, retry=RetryPolicy(max_attempts=1), transport=httpx.MockTransport(api), upload_transport=storage
    )


async def _submit(api: Recorder, storage: httpx.AsyncBaseTransport, ledger: Ledger, docs: list[Any]) -> Any:
    async with _client(api, storage) as client:
        return await submit_batch(client, ledger, ledger.start_run(campaign="c1"), docs)


def test_an_upload_is_streamed_in_blocks_never_held_whole(
    memory_store: MemoryFileSystem, reads: dict[str, Any], ledger: Ledger
) -> None:
    data = bytes(range(256)) * (24 * 1024 * 1024 // 256)  # 24 MiB: the upload flow
    memory_store.pipe_file("/term/a/thesis.txt", data)
    doc = planned("u1", mode="upload", path=resolve("memory://term/a/thesis.txt"), text=None, size_bytes=len(data))
    api, sink = Recorder(httpx.Response(201, json=UPLOAD), created()), _Sink()
    tracemalloc.start()
    try:
        result = asyncio.run(_submit(api, sink, ledger, [doc]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.submitted == 1 and result.failed == 0
    assert (sink.length, sink.digest.hexdigest()) == (len(data), hashlib.sha256(data).hexdigest())
    assert max(reads["sizes"]) <= BLOCK_BYTES and sum(reads["sizes"]) == len(data)
    assert peak < len(data) // 3, f"{peak:,} bytes traced at the peak for a {len(data):,} byte document"
    create_upload, create_check = api.requests
    assert create_check.headers["Idempotency-Key"] == doc.idempotency_key  # the key planning made
    again = asyncio.run(_submit(api, sink, ledger, [doc]))
    assert (again.already_done, again.submitted, len(api.requests), sink.puts) == (1, 0, 2, 1)  # billed once


def test_a_multipart_file_is_read_before_its_request_slot(
    memory_store: MemoryFileSystem, reads: dict[str, Any], ledger: Ledger
) -> None:
    """Reads overlap: more files are read at once than there are request slots (each read here
    takes 0.2 s, as the store's latency would; at one slot's worth they would queue)."""
    docs = []
    for i in range(8):
        memory_store.pipe_file(f"/term/a/e{i}.txt", f"essay number {i}".encode())
        path = resolve(f"memory://term/a/e{i}.txt")
        docs.append(
            planned(f"d{i}", row=i, mode="multipart", path=path, text=None, size_bytes=len(f"essay number {i}"))
        )
    reads["delay"] = 0.2
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    result = run(submit_batch(client, ledger, run_id, docs, SubmitOptions(concurrency=2)))
    assert result.submitted == 8 and len(reads["sizes"]) == 8
    assert _Reads.most > 2, f"at most {_Reads.most} reads at once for 2 request slots"


def test_a_multipart_file_goes_whole_in_one_read(
    memory_store: MemoryFileSystem, reads: dict[str, Any], ledger: Ledger
) -> None:
    memory_store.pipe_file("/term/a/essay.txt", b"rivers carry sediment")
    doc = planned("m1", mode="multipart", path=resolve("memory://term/a/essay.txt"), text=None, size_bytes=21)
    api = Recorder(created())
    result = asyncio.run(_submit(api, _Sink(), ledger, [doc]))
    assert result.submitted == 1 and reads["sizes"] == [21]
    assert b"rivers carry sediment" in api.bodies[0]
    assert api.requests[0].headers["Idempotency-Key"] == doc.idempotency_key


def test_a_file_sent_as_its_text_is_read_through_a_bounded_copy(memory_store: MemoryFileSystem, ledger: Ledger) -> None:
    essay = ["Rivers carry sediment from the mountains.", "Deltas form where the current slows."]
    data = gen.odt_paragraphs(essay)
    memory_store.pipe_file("/term/a/essay.odt", data)
    doc = planned("t1", mode="text", path=resolve("memory://term/a/essay.odt"), text=None, size_bytes=len(data))
    before = set(Path(tempfile.gettempdir()).glob("doccheck-*.odt"))
    api = Recorder(created())
    result = asyncio.run(_submit(api, _Sink(), ledger, [doc]))
    assert result.submitted == 1

    assert json.loads(api.bodies[0])["text"].split() == " ".join(essay).split()
    assert set(Path(tempfile.gettempdir()).glob("doccheck-*.odt")) == before  # the copy is removed


@pytest.mark.parametrize(("mode", "size", "code"), [
    ("multipart", 100, "file_not_found"),
    ("upload", MULTIPART_MAX_BYTES + 100, "file_not_found"),
    ("text", 100, "file_unreadable"),
])  # fmt: skip
def test_a_file_deleted_before_sending_is_its_rows_failure_as_a_local_one_is(
    mode: str, size: int, code: str, memory_store: MemoryFileSystem, ledger: Ledger, tmp_path: Path
) -> None:
    local = planned("l", mode=mode, path=tmp_path / "gone.odt", text=None, size_bytes=size, idempotency_key="k-l")
    remote = planned(
        "r", row=2, mode=mode, path=resolve("memory://term/a/gone.odt"), text=None, size_bytes=size,
        idempotency_key="k-r",
    )  # fmt: skip
    api = Recorder(httpx.Response(201, json=UPLOAD), created())
    result = asyncio.run(_submit(api, httpx.MockTransport(Recorder(httpx.Response(200))), ledger, [local, remote]))
    assert (result.failed, result.submitted) == (2, 0)
    failures = {f.document_id: f for f in result.failures}
    assert failures["l"].code == failures["r"].code == code
    assert "No such file or directory" in failures["r"].message
    if code == "file_not_found":
        assert "memory://term/a/gone.odt" in failures["r"].message
    assert not any(r.url.path.endswith("/checks") for r in api.requests)  # nothing was made, nothing billed
