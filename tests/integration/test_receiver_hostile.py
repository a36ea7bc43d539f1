"""Hostile deliveries against a real receiver: correctly signed but deep, non-finite or
huge-number bodies answer 400 (never 5xx, never a traceback), and slow clients are cut off.

The module's receiver has short read deadlines (1 s headers, 2 s body) so the slow-client
tests stay quick, and its secret from DOCCHECK_WEBHOOK_SECRET.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from doccheck.webhooks import sign
from tests.fixtures.events import event_body
from tests.fixtures.receiver import ReceiverHandle, hostile_receiver

pytestmark = pytest.mark.integration

SECRET = "whsec_hostile_" + uuid.uuid4().hex
HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def strict_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReceiverHandle]:
    with hostile_receiver(tmp_path_factory.mktemp("hostile-receiver"), "--header-timeout", str(HEADER_TIMEOUT_S),
                          "--body-timeout", str(BODY_TIMEOUT_S), secret=SECRET) as handle:  # fmt: skip
        yield handle


def _post_signed(receiver: ReceiverHandle, body: bytes) -> httpx.Response:
    with httpx.Client(trust_env=False, timeout=10) as http:
        return http.post(f"{receiver.url}/webhook", content=body,
                         headers={"Service-Signature": sign(body, SECRET), "Content-Type": "application/json"})  # fmt: skip


def _with_metadata(raw: bytes) -> bytes:
    body = event_body(event_id=f"evt_{uuid.uuid4().hex}")
    return body.replace(b'{"document_id": "d1"}', raw)


HOSTILE_BODIES = {
    "deep brackets": b"[" * 200_000 + b"]" * 200_000,
    "deep objects in metadata": _with_metadata(b'{"a": ' * 60 + b"1" + b"}" * 60),
    "NaN": _with_metadata(b'{"x": NaN}'),
    "Infinity": _with_metadata(b'{"x": Infinity}'),
    "1e999": _with_metadata(b'{"x": 1e999}'),
    "5000 digits": _with_metadata(b'{"x": ' + b"7" * 5000 + b"}"),
    "lone surrogate": _with_metadata(b'{"x": "\\ud800"}'),
    "invalid utf-8": _with_metadata(b'{"x": "\xff\xfe"}'),
}


@pytest.mark.parametrize("body", HOSTILE_BODIES.values(), ids=HOSTILE_BODIES.keys())
def test_signed_hostile_body_is_400_and_not_stored(strict_receiver: ReceiverHandle, body: bytes) -> None:
    before = strict_receiver.ledger.unapplied_event_count()
    response = _post_signed(strict_receiver, body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_event"
    assert strict_receiver.ledger.unapplied_event_count() == before


def test_ordinary_signed_event_still_stored(strict_receiver: ReceiverHandle) -> None:
    response = _post_signed(strict_receiver, event_body(event_id=f"evt_{uuid.uuid4().hex}"))
    assert response.status_code == 200, response.text
    assert response.json() == {"received": True, "duplicate": False}


def _connect(receiver: ReceiverHandle) -> socket.socket:
    host, port = receiver.url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def _healthy(receiver: ReceiverHandle) -> float:
    started = time.monotonic()
    with httpx.Client(trust_env=False, timeout=5) as http:
        assert http.get(f"{receiver.url}/healthz").status_code == 200
    return time.monotonic() - started


def _dribble_until_closed(sock: socket.socket, data: bytes, bound: float) -> tuple[float, bytes]:
    started = time.monotonic()
    answer = b""
    sock.settimeout(0.2)
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            break
        if chunk == b"":
            break
        answer += chunk
        if time.monotonic() - started > bound + 5:
            pytest.fail("the receiver kept a dribbling client")
    return time.monotonic() - started, answer


def test_slow_headers_cut_off(strict_receiver: ReceiverHandle) -> None:
    with _connect(strict_receiver) as sock:
        assert _healthy(strict_receiver) < 2.0
        elapsed, _ = _dribble_until_closed(sock, b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 200,
                                           HEADER_TIMEOUT_S)  # fmt: skip
    assert elapsed < HEADER_TIMEOUT_S + 2.0


def test_slow_body_gets_408(strict_receiver: ReceiverHandle) -> None:
    body = event_body(event_id=f"evt_{uuid.uuid4().hex}")
    head = (f"POST /webhook HTTP/1.1\r\nHost: x\r\nService-Signature: {sign(body, SECRET)}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    with _connect(strict_receiver) as sock:
        sock.sendall(head)
        elapsed, answer = _dribble_until_closed(sock, body, BODY_TIMEOUT_S)
        assert _healthy(strict_receiver) < 2.0
    assert elapsed < BODY_TIMEOUT_S + 2.0
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "request_timeout"


def test_receiver_log_names_no_secret(strict_receiver: ReceiverHandle) -> None:
    assert SECRET not in Path(strict_receiver.log_path).read_text(errors="replace")
