"""Time rules via the virtual clock, on a private emulator (its clock runs far ahead)."""

from __future__ import annotations

import httpx
import pytest

from tests.factories import assert_service_error as assert_error
from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration


def _put(url: str, data: bytes, ctype: str = "text/plain") -> httpx.Response:
    return httpx.put(url, content=data, headers={"Content-Type": ctype}, trust_env=False)


def test_upload_url_expires_after_600_seconds(isolated_emulator: EmulatorHandle) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    with emu.client(key) as c:
        up = c.post("/uploads", json={"filename": "a.txt"}).json()
        emu.advance(595)
        assert _put(up["upload_url"], b"in time words").status_code == 200
        late = c.post("/uploads", json={"filename": "b.txt"}).json()
        emu.advance(601)
        assert_error(_put(late["upload_url"], b"too late"), 403, "upload_url_expired")
        # bytes that arrived in time can still be used after the URL expired
        assert c.post("/checks", json={"upload_id": up["upload_id"]}).status_code == 201


def test_unused_uploads_are_deleted_after_24_hours(isolated_emulator: EmulatorHandle) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    with emu.client(key) as c:
        ups = [c.post("/uploads", json={"filename": f"{i}.txt"}).json() for i in range(50)]
        _put(ups[0]["upload_url"], b"some words in here")
        assert_error(c.post("/uploads", json={"filename": "x.txt"}), 409, "too_many_uploads")
        emu.advance(24 * 3600 - 60)
        assert emu.account_state(key)["waiting_uploads"] == 50
        emu.advance(61)
        assert emu.account_state(key)["waiting_uploads"] == 0
        assert_error(c.post("/checks", json={"upload_id": ups[0]["upload_id"]}), 404, "upload_not_found")
        assert c.post("/uploads", json={"filename": "x.txt"}).status_code == 201


def test_processing_waits_for_the_clock_and_idempotency_keys_expire(isolated_emulator: EmulatorHandle) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    emu.set_faults(processing_seconds=300)
    try:
        with emu.client(key) as c:
            h = {"Idempotency-Key": "k"}
            check = c.post("/checks", json={"text": "one two three"}, headers=h).json()
            emu.advance(299)
            assert c.get(f"/checks/{check['id']}").json()["status"] == "processing"
            emu.advance(2)
            assert c.get(f"/checks/{check['id']}").json()["status"] == "completed"
            assert c.post("/checks", json={"text": "one two three"}, headers=h).json()["id"] == check["id"]
            emu.advance(24 * 3600 + 1)
            fresh = c.post("/checks", json={"text": "one two three"}, headers=h).json()
            assert fresh["id"] != check["id"]
    finally:
        emu.reset_faults()
