"""Hostile requests against a real emulator: non-finite and deep JSON, embedded private
addresses, slow clients. None may answer 5xx, create or charge anything, poison later
answers, or leave a traceback in the emulator's log.

The module's emulator refuses private webhooks (the default a user runs) and has short
read deadlines (1 s headers, 2 s body, 1 s idle) so the slow-client tests stay quick.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.fixtures.emulator import EmulatorHandle, start_emulator, stop_emulator

pytestmark = pytest.mark.integration

HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def strict_emulator() -> Iterator[EmulatorHandle]:
    handle = start_emulator(
        "--header-timeout", str(HEADER_TIMEOUT_S), "--body-timeout", str(BODY_TIMEOUT_S), "--idle-timeout", "1",
        api_key="sk_test_hostile",
    )  # fmt: skip
    try:
        yield handle
    finally:
        log = handle.log()
        stop_emulator(handle)
        assert "Traceback" not in log, log[-3000:]
        assert "unexpected" not in log, log[-3000:]


@pytest.fixture
def account(strict_emulator: EmulatorHandle) -> str:
    return strict_emulator.new_account()


def _assert_untouched(emu: EmulatorHandle, key: str) -> None:
    state = emu.account_state(key)
    assert state["checks"] == 0 and state["charged_cents"] == 0, state
    with emu.client(key) as client:
        listing = client.get("/checks")
    assert listing.status_code == 200, listing.text
    assert listing.json()["data"] == []


NON_FINITE_JSON = [
    b'{"text": "one two three", "metadata": {"score": NaN}}',
    b'{"text": "one two three", "metadata": {"score": Infinity}}',
    b'{"text": "one two three", "metadata": {"score": -Infinity}}',
    b'{"text": "one two three", "metadata": {"score": 1e999}}',
    b'{"text": "one two three", "metadata": {"n": ' + b"9" * 5000 + b"}}",
    b'{"text": "one two three", "metadata": ' + b'{"a": ' * 40 + b"1" + b"}" * 40 + b"}",
    b'{"text": "one two three", "metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"text": "one two three", "metadata": {"k": "\\ud800"}}',
]


@pytest.mark.parametrize("body", NON_FINITE_JSON, ids=lambda b: b[40:70].decode(errors="replace"))
def test_bad_json_metadata_is_422_and_creates_nothing(strict_emulator: EmulatorHandle, account: str,
                                                       body: bytes) -> None:  # fmt: skip
    with strict_emulator.client(account) as client:
        response = client.post("/checks", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_input"
    _assert_untouched(strict_emulator, account)


MULTIPART_METADATA = ["NaN", '{"x": NaN}', '{"x": Infinity}', '{"a": ' * 40 + "1" + "}" * 40,
                      "[" * 50_000 + "]" * 50_000, '{"x": 1e400}']  # fmt: skip


@pytest.mark.parametrize("metadata", MULTIPART_METADATA, ids=lambda m: m[:12])
def test_bad_multipart_metadata_is_422_and_creates_nothing(strict_emulator: EmulatorHandle, account: str,
                                                            metadata: str) -> None:  # fmt: skip
    with strict_emulator.client(account) as client:
        response = client.post(
            "/checks",
            data={"metadata": metadata, "products": "ai"},
            files={"file": ("essay.txt", b"one two three four five", "text/plain")},
        )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_input"
    _assert_untouched(strict_emulator, account)


def test_finite_metadata_still_accepted_and_listed(strict_emulator: EmulatorHandle, account: str) -> None:
    with strict_emulator.client(account) as client:
        created = client.post(
            "/checks", json={"text": "one two three four", "metadata": {"x": 1.5, "n": [1, {"a": None}]}}
        )
        assert created.status_code == 201, created.text
        listing = client.get("/checks")
    assert listing.status_code == 200
    assert listing.json()["data"][0]["metadata"] == {"x": 1.5, "n": [1, {"a": None}]}


EMBEDDED_PRIVATE_URLS = [
    "https://[::127.0.0.1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[64:ff9b::7f00:1]/hook",
    "https://[64:ff9b:1::a00:1]/hook",
    "https://[2002:7f00:1::]/hook",
    "https://[2002:c0a8:101::1]/hook",
    "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",
    "https://[2001:4860::5efe:7f00:1]/hook",
    "https://[::]/hook",
    "https://127.1/hook",
]


@pytest.mark.parametrize("url", EMBEDDED_PRIVATE_URLS)
def test_webhook_urls_embedding_private_v4_are_refused(strict_emulator: EmulatorHandle, account: str,
                                                        url: str) -> None:  # fmt: skip
    with strict_emulator.client(account) as client:
        response = client.put("/webhook", json={"url": url})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_webhook_url"


def _healthy(emu: EmulatorHandle) -> float:
    started = time.monotonic()
    with httpx.Client(trust_env=False, timeout=5) as http:
        assert http.get(f"{emu.root_url}/_emulator/health").status_code == 200
    return time.monotonic() - started


def _connect(emu: EmulatorHandle, storage: bool = False) -> socket.socket:
    host, port = (emu.storage_url if storage else emu.root_url).removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def _closed_within(sock: socket.socket, dribble: bytes, bound: float) -> tuple[float, bytes]:
    """Send ``dribble`` one byte every 0.2 s until the server closes; (seconds, what it answered)."""
    started = time.monotonic()
    answer = b""
    sock.settimeout(0.2)
    for byte in dribble:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            break
        try:
            data = sock.recv(4096)
        except TimeoutError:
            data = None
        except OSError:
            break
        if data == b"":
            break
        if data:
            answer += data
        if time.monotonic() - started > bound + 5:
            pytest.fail(f"the server kept a dribbling client for {time.monotonic() - started:.1f} s")
    return time.monotonic() - started, answer


@pytest.mark.parametrize("storage", [False, True], ids=["api", "storage"])
def test_slow_headers_are_cut_off_and_server_stays_responsive(strict_emulator: EmulatorHandle, storage: bool) -> None:
    dribble = b"GET /_emulator/health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
    with _connect(strict_emulator, storage) as sock:
        assert _healthy(strict_emulator) < 2.0  # served while the slow client hangs on
        elapsed, _ = _closed_within(sock, dribble, HEADER_TIMEOUT_S)
    assert elapsed < HEADER_TIMEOUT_S + 2.0, elapsed


def test_idle_connection_without_a_request_is_closed(strict_emulator: EmulatorHandle) -> None:
    with _connect(strict_emulator) as sock:
        sock.settimeout(HEADER_TIMEOUT_S + 3)
        started = time.monotonic()
        assert sock.recv(100) == b""
    assert time.monotonic() - started < HEADER_TIMEOUT_S + 2.0


def test_slow_body_gets_408_and_creates_nothing(strict_emulator: EmulatorHandle, account: str) -> None:
    body = json.dumps({"text": "word " * 200}).encode()
    head = (f"POST /api/v1/checks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {account}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    with _connect(strict_emulator) as sock:
        sock.sendall(head)
        elapsed, answer = _closed_within(sock, body, BODY_TIMEOUT_S)
        assert _healthy(strict_emulator) < 2.0
    assert elapsed < BODY_TIMEOUT_S + 2.0, elapsed
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"request_timeout" in answer
    _assert_untouched(strict_emulator, account)


def test_slow_upload_body_stores_no_fragment(strict_emulator: EmulatorHandle, account: str) -> None:
    with strict_emulator.client(account) as client:
        upload = client.post("/uploads", json={"filename": "a.txt", "content_type": "text/plain", "size_bytes": 500})
    assert upload.status_code == 201, upload.text
    url = httpx.URL(upload.json()["upload_url"])
    head = (f"PUT {url.raw_path.decode()} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
            f"Content-Length: 500\r\n\r\n").encode()  # fmt: skip
    with _connect(strict_emulator, storage=True) as sock:
        sock.sendall(head + b"word " * 10)
        elapsed, answer = _closed_within(sock, b"x" * 100, BODY_TIMEOUT_S)
    assert elapsed < BODY_TIMEOUT_S + 2.0
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    with strict_emulator.client(account) as client:  # the upload never got bytes: no check from it
        check = client.post("/checks", json={"upload_id": upload.json()["upload_id"]})
    assert check.status_code == 409 and check.json()["error"]["code"] == "upload_incomplete", check.text
