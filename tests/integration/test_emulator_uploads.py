"""The upload flow over real sockets: signed PUT on the storage origin, limits, single use."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit, urlunsplit

import httpx
import pytest

from tests.factories import assert_service_error as assert_error
from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration

DOC = b"The river ran fast over the stones below the old mill, and the wheel turned all day long."


def _put(url: str, data: bytes, content_type: str, **kw) -> httpx.Response:
    return httpx.put(url, content=data, headers={"Content-Type": content_type}, trust_env=False, timeout=60, **kw)


def test_upload_flow_creates_check_from_stored_bytes(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        r = c.post("/uploads", json={"filename": "mill.txt", "size_bytes": len(DOC)})
        assert r.status_code == 201, r.text
        up = r.json()
        assert up["object"] == "upload" and up["expires_in"] == 600 and up["content_type"] == "text/plain"
        assert up["instructions"] and up["upload_url"].startswith(emulator.storage_url + "/uploads/")
        assert (
            emulator.account_state(emulator_account) | {}
            and emulator.account_state(emulator_account)["charged_cents"] == 0
        )
        assert emulator.account_state(emulator_account)["waiting_uploads"] == 1
        assert_error(c.post("/checks", json={"upload_id": up["upload_id"]}), 409, "upload_incomplete")
        assert _put(up["upload_url"], DOC, "text/plain").status_code == 200
        check = c.post("/checks", json={"upload_id": up["upload_id"], "products": ["ai"]})
        assert check.status_code == 201, check.text
        assert check.json()["name"] == "mill.txt" and check.json()["words"] == 18
        # later PUTs change nothing, the upload_id works once
        assert_error(_put(up["upload_url"], b"other bytes entirely", "text/plain"), 409, "upload_consumed")
        assert_error(c.post("/checks", json={"upload_id": up["upload_id"]}), 409, "upload_consumed")
        emulator.advance(1.5)
        original = c.get(f"/checks/{check.json()['id']}/files/original")
        assert original.content == DOC
    state = emulator.account_state(emulator_account)
    assert state["waiting_uploads"] == 0 and state["charged_cents"] == 1


def test_content_type_is_inferred_or_taken_as_given(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        assert c.post("/uploads", json={"filename": "a.PDF"}).json()["content_type"] == "application/pdf"
        docx = c.post("/uploads", json={"filename": "a.docx"}).json()["content_type"]
        assert docx.endswith("wordprocessingml.document")
        given = c.post("/uploads", json={"filename": "a.txt", "content_type": "text/plain; charset=utf-8"}).json()
        assert given["content_type"] == "text/plain; charset=utf-8"
        assert _put(given["upload_url"], DOC, "text/plain").status_code == 415
        assert _put(given["upload_url"], DOC, "text/plain; charset=utf-8").status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 422, "invalid_input"),
        ({"filename": ""}, 422, "invalid_input"),
        ({"filename": 5}, 422, "invalid_input"),
        ({"filename": "a.exe"}, 415, "unsupported_file_type"),
        ({"filename": "noext"}, 415, "unsupported_file_type"),
        ({"filename": "a.txt", "size_bytes": 50 * 1024 * 1024 + 1}, 413, "file_too_large"),
        ({"filename": "a.txt", "size_bytes": "10"}, 422, "invalid_input"),
        ({"filename": "a.txt", "size_bytes": -1}, 422, "invalid_input"),
        ({"filename": "a.txt", "size_bytes": True}, 422, "invalid_input"),
        ({"filename": "a.txt", "content_type": "not a mime"}, 422, "invalid_input"),
    ],
)
def test_create_upload_errors(
    emulator: EmulatorHandle, emulator_account: str, body: dict, status: int, code: str
) -> None:
    with emulator.client(emulator_account) as c:
        assert_error(c.post("/uploads", json=body), status, code)
    assert emulator.account_state(emulator_account)["waiting_uploads"] == 0


def test_put_checks_signature(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        up = c.post("/uploads", json={"filename": "a.txt"}).json()
    parts = urlsplit(up["upload_url"])
    q = parse_qs(parts.query)
    tampered = urlunsplit(parts._replace(query=f"expires={int(q['expires'][0]) + 3600}&sig={q['sig'][0]}"))
    assert_error(_put(tampered, DOC, "text/plain"), 403, "invalid_signature")
    unsigned = urlunsplit(parts._replace(query=""))
    assert_error(_put(unsigned, DOC, "text/plain"), 403, "invalid_signature")
    other_id = urlunsplit(parts._replace(path="/uploads/00000000-0000-0000-0000-000000000000"))
    assert_error(_put(other_id, DOC, "text/plain"), 403, "invalid_signature")
    get = httpx.get(up["upload_url"], trust_env=False)
    assert get.status_code == 405


def test_put_over_declared_size_is_413_and_stores_nothing(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        up = c.post("/uploads", json={"filename": "a.txt", "size_bytes": 10}).json()
        assert_error(_put(up["upload_url"], DOC, "text/plain"), 413, "file_too_large")
        assert_error(c.post("/checks", json={"upload_id": up["upload_id"]}), 409, "upload_incomplete")

        # a streamed body without Content-Length is cut off while streaming, too
        def gen():
            for _ in range(10):
                yield b"x" * 5

        r = httpx.put(up["upload_url"], content=gen(), headers={"Content-Type": "text/plain"}, trust_env=False)
        assert_error(r, 413, "file_too_large")


def test_put_over_50mb_is_refused(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        up = c.post("/uploads", json={"filename": "big.txt"}).json()

    def gen():  # 51 MB streamed (chunked, no Content-Length): refused while streaming
        chunk = b"y" * (1024 * 1024)
        for _ in range(51):
            yield chunk

    r = httpx.put(up["upload_url"], content=gen(), headers={"Content-Type": "text/plain"}, trust_env=False, timeout=60)
    assert_error(r, 413, "file_too_large")


def test_at_most_50_waiting_uploads(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        ups = [c.post("/uploads", json={"filename": f"{i}.txt"}) for i in range(50)]
        assert all(r.status_code == 201 for r in ups)
        assert_error(c.post("/uploads", json={"filename": "51.txt"}), 409, "too_many_uploads")
        # consuming one frees a slot
        first = ups[0].json()
        assert _put(first["upload_url"], DOC, "text/plain").status_code == 200
        assert c.post("/checks", json={"upload_id": first["upload_id"]}).status_code == 201
        assert c.post("/uploads", json={"filename": "51.txt"}).status_code == 201
    assert emulator.account_state(emulator_account)["waiting_uploads"] == 50


def test_idempotent_replay_naming_a_consumed_upload(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        up = c.post("/uploads", json={"filename": "a.md"}).json()
        _put(up["upload_url"], DOC, "text/markdown")
        h = {"Idempotency-Key": "upload-row-9"}
        first = c.post("/checks", json={"upload_id": up["upload_id"]}, headers=h)
        again = c.post("/checks", json={"upload_id": up["upload_id"]}, headers=h)
        assert first.status_code == again.status_code == 201
        assert first.json()["id"] == again.json()["id"]
        # the same bytes as text are the same document
        same_text = c.post("/checks", json={"text": DOC.decode()}, headers=h)
        assert same_text.json()["id"] == first.json()["id"]
    assert emulator.account_state(emulator_account)["checks"] == 1
