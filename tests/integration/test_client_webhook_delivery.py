"""Real deliveries signed by the emulator verify with ``doccheck.webhooks`` (and rotation works)."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from doccheck.client import DocCheckClient, RetryPolicy
from doccheck.webhooks import InvalidSignature, StaleSignature, parse_event, verify

pytestmark = pytest.mark.integration

TEXT = "Rivers shape the towns that grow beside them, and the towns in turn reshape the rivers."


@dataclass
class Capture:
    """Raw deliveries as they arrived (body bytes and headers), before any parsing."""

    url: str
    received: list[tuple[bytes, dict[str, str]]] = field(default_factory=list)

    def wait_for(self, n: int, timeout: float = 10.0) -> list[tuple[bytes, dict[str, str]]]:
        deadline = time.monotonic() + timeout
        while len(self.received) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.received) >= n, f"got {len(self.received)} deliveries, expected {n}"
        return self.received[:n]


@pytest.fixture
def capture() -> Iterator[Capture]:
    received: list[tuple[bytes, dict[str, str]]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received.append((body, {k: v for k, v in self.headers.items()}))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Capture(f"http://127.0.0.1:{server.server_address[1]}/hook", received)
    finally:
        server.shutdown()
        server.server_close()


def emulator_now(emulator) -> float:
    """The emulator's virtual clock (real time + offset): the signatures' ``t`` is on it."""
    return time.time() + float(emulator.advance(0)["clock_offset_s"])


def test_emulator_deliveries_verify_and_parse(emulator, emulator_account: str, capture: Capture) -> None:
    with DocCheckClient(emulator.base_url, emulator_account, retry=RetryPolicy(max_attempts=1)) as client:
        hook = client.put_webhook(capture.url)
        assert hook.secret is not None
        secret = hook.secret.get_secret_value()
        check = client.create_check(text=TEXT, products=["ai", "similarity"], metadata={"row": 1})
        emulator.advance(60)
        deliveries = capture.wait_for(2)
        now = emulator_now(emulator)
        products = set()
        for raw, headers in deliveries:
            verify(raw, headers["Service-Signature"], [secret], now=now)
            with pytest.raises(InvalidSignature):
                verify(raw + b" ", headers["Service-Signature"], [secret], now=now)
            with pytest.raises(StaleSignature):
                verify(raw, headers["Service-Signature"], [secret], now=now + 301)
            event = parse_event(raw)
            assert event.type == headers["Service-Event"] == "check.completed"
            assert event.check.id == check.id and event.check.metadata == {"row": 1}
            products.add(event.product)
        assert products == {"ai", "similarity"}

        # rotation: the next delivery is signed with the new secret only
        rotated = client.rotate_webhook()
        assert rotated.secret is not None
        new_secret = rotated.secret.get_secret_value()
        client.create_check(text=TEXT + " again")
        emulator.advance(60)
        raw, headers = capture.wait_for(3)[2]
        now = emulator_now(emulator)
        verify(raw, headers["Service-Signature"], [new_secret, secret], now=now)  # during the rotation window
        verify(raw, headers["Service-Signature"], [secret, new_secret], now=now)
        with pytest.raises(InvalidSignature):
            verify(raw, headers["Service-Signature"], [secret], now=now)
