"""The emulator's ASGI apps in-process (no sockets): bounded body reading and error shapes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from doccheck.emulator._emulator_app import create_app
from doccheck.emulator._runtime import Emulator, EmulatorConfig
from doccheck.emulator._service_limits import MB
from doccheck.emulator._storage_origin import StorageOrigin, upload_url
from doccheck.emulator._store import Upload


async def _put_chunks(
    emu: Emulator, upload: Upload, chunks: int, chunk_size: int, headers: list
) -> tuple[int, dict, int]:
    """Drive the storage origin with a body of ``chunks`` chunks; return status, body, chunks read."""
    url = httpx.URL(upload_url(emu, upload))
    consumed = 0

    async def receive() -> dict[str, Any]:
        nonlocal consumed
        consumed += 1
        more = consumed < chunks
        return {"type": "http.request", "body": b"z" * chunk_size, "more_body": more}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "PUT", "path": url.path, "query_string": url.query, "headers": headers}
    await StorageOrigin(emu)(scope, receive, send)
    return sent[0]["status"], json.loads(sent[1]["body"]), consumed


def _emulator_with_upload(size_bytes: int | None) -> tuple[Emulator, Upload]:
    emu = Emulator(EmulatorConfig(api_keys=["k"]))
    now = emu.clock.now()
    upload = Upload(id="u1", filename="a.txt", content_type="text/plain", size_bytes=size_bytes,
                    created_at=now, expires_at=now + 600)  # fmt: skip
    emu.store.accounts["k"].uploads["u1"] = upload
    emu.store.uploads_by_id["u1"] = upload
    return emu, upload


def test_storage_stops_storing_at_the_declared_size() -> None:
    emu, upload = _emulator_with_upload(size_bytes=3 * MB)
    status, body, consumed = asyncio.run(_put_chunks(emu, upload, 8, MB, [(b"content-type", b"text/plain")]))
    assert status == 413 and body["error"]["code"] == "file_too_large"
    assert upload.data is None  # nothing kept; the rest was read and discarded
    assert consumed == 8


def test_storage_refuses_by_content_length_before_reading() -> None:
    emu, upload = _emulator_with_upload(size_bytes=None)
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(200 * MB).encode())]
    status, body, consumed = asyncio.run(_put_chunks(emu, upload, 200, MB, headers))
    assert status == 413 and consumed == 0  # far over the drain cap: not even drained


def test_storage_accepts_exact_size_and_checks_content_type() -> None:
    emu, upload = _emulator_with_upload(size_bytes=2 * MB)
    status, body, _ = asyncio.run(_put_chunks(emu, upload, 2, MB, [(b"content-type", b"text/plain")]))
    assert status == 200 and body["size_bytes"] == 2 * MB and upload.data is not None
    status, body, _ = asyncio.run(_put_chunks(emu, upload, 1, 10, [(b"content-type", b"application/pdf")]))
    assert status == 415 and body["error"]["code"] == "content_type_mismatch"


def test_api_errors_keep_the_service_shape_in_process() -> None:
    async def run() -> None:
        emu = Emulator(EmulatorConfig(api_keys=["k"]))
        transport = httpx.ASGITransport(app=create_app(emu))
        async with httpx.AsyncClient(transport=transport, base_url="http://emu") as c:
            h = {"Authorization": "Bearer k"}
            r = await c.post("/api/v1/checks", content=b"[", headers={**h, "content-type": "application/json"})
            assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_input"
            r = await c.get("/api/v1/nope", headers=h)
            assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
            r = await c.patch("/api/v1/checks", headers=h)
            assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
            r = await c.post("/api/v1/checks", json={"text": "hello world"}, headers=h)
            assert r.status_code == 201 and r.headers["x-request-id"].startswith("req_")
            spec = (await c.get("/api/v1/openapi.json")).json()
            assert "/api/v1/checks" in spec["paths"] and "/_emulator/state" not in spec["paths"]
            await emu.dispatcher.aclose()

    asyncio.run(run())
