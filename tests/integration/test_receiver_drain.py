"""SIGTERM to a real ``doccheck receiver`` drains it (issue 23): new connections are refused at
once, the delivery in flight when the signal came is still verified, stored and answered 200,
then one line and exit 143."""

from __future__ import annotations

import signal
import socket
import time
import uuid
from pathlib import Path

import httpx
import pytest

from doccheck.webhooks import sign
from tests.fixtures.events import event_body
from tests.fixtures.receiver import start_receiver, stop_receiver

pytestmark = pytest.mark.integration

SECRET = "whsec_drain_" + uuid.uuid4().hex


def _refused(url: str) -> bool:
    try:
        httpx.get(f"{url}/healthz", timeout=1.0)
    except httpx.ConnectError:
        return True
    return False


def _response(sock: socket.socket) -> str:
    """One whole HTTP response: its head and Content-Length bytes of body (a single ``recv``
    may return the head alone, the body arriving in a second segment)."""
    data = b""
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)  # fmt: skip
            if len(rest) >= length:
                return data.decode(errors="replace")
        chunk = sock.recv(65536)
        if not chunk:
            return data.decode(errors="replace")
        data += chunk


def test_sigterm_finishes_the_delivery_in_flight_then_exits_143(tmp_path: Path) -> None:
    handle = start_receiver(f"sqlite:///{tmp_path / 'ledger.db'}", env={"DOCCHECK_WEBHOOK_SECRET": SECRET})
    try:
        body = event_body(event_id=f"evt_{uuid.uuid4().hex}")
        head = (f"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Service-Signature: {sign(body, SECRET)}\r\nContent-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
        port = int(handle.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as delivery:
            delivery.sendall(head + body[:20])  # in flight: the body is still arriving
            time.sleep(0.3)
            handle.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 5
            while not _refused(handle.url):  # stops accepting at once
                assert time.monotonic() < deadline, "the receiver still accepts connections after SIGTERM"
                time.sleep(0.05)
            assert handle.process.poll() is None  # still draining the delivery in flight
            delivery.sendall(body[20:])
            answer = _response(delivery)
        assert answer.startswith("HTTP/1.1 200"), answer
        assert '"duplicate":false' in answer.replace(" ", "")
        assert handle.process.wait(timeout=15) == 143
        log = handle.log()
        assert "Traceback" not in log, log
        stop_lines = [line for line in log.splitlines() if line.startswith("receiver stopped")]
        assert len(stop_lines) == 1 and "SIGTERM" in stop_lines[0] and "1 in flight finished" in stop_lines[0], log
        assert handle.ledger.unapplied_event_count() == 1  # the delivery was stored
    finally:
        stop_receiver(handle)
