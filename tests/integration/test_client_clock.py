"""Client tests that move the emulator's clock (expiries, 24 h retention, processing, signed
deliveries), on a private emulator for this module.

The session emulator's clock must stay close to real time (webhook signatures carry it and
real-time receivers reject anything over 300 s old), so this module overrides ``emulator``
with ``isolated_emulator``; ``emulator_account`` then creates accounts on the private one.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from doccheck.client import (
    ConflictError,
    DocCheckClient,
    NotFoundError,
    RetryPolicy,
    UploadExpiredError,
    estimate_cost_cents,
)
from doccheck.errors import InvalidSignature, StaleSignature
from doccheck.webhooks import parse_event, verify
from tests.factories import NO_RETRY, TEXT
from tests.factories import assert_client_error as assert_error

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def emulator(isolated_emulator):  # type: ignore[no-untyped-def]
    """This module's emulator: a private one, whose clock the tests may move freely."""
    return isolated_emulator


@pytest.fixture
def client(emulator, emulator_account: str) -> Iterator[DocCheckClient]:
    with DocCheckClient(emulator.base_url, emulator_account, retry=NO_RETRY, timeout=30) as c:
        yield c


def test_text_check_lifecycle_and_reads(emulator, emulator_account: str, client: DocCheckClient) -> None:
    check = client.create_check(text=TEXT, products=["ai", "similarity"], name="essay", metadata={"row": 7})
    assert check.status == "processing" and check.completed_at is None and check.error is None
    assert check.ai is not None and check.ai.status == "processing"
    assert check.similarity is not None and not any([check.files.pdf, check.files.original, check.files.similarity_pdf])
    assert check.metadata == {"row": 7} and check.name == "essay" and check.words
    assert check.cost.total_cents == estimate_cost_cents(check.words or 0, ["ai", "similarity"])
    assert emulator.account_state(emulator_account)["charged_cents"] == check.cost.total_cents

    emulator.advance(120)
    done = client.get_check(check.id)
    assert done.status == "completed" and done.completed_at is not None
    assert (
        done.ai
        and done.ai.status == "completed"
        and 0 <= (done.ai.score or 0) <= 1
        and done.ai.label in {"human", "mixed", "ai"}
    )
    assert done.similarity and done.similarity.status == "completed" and 0 <= (done.similarity.score or 0) <= 100
    assert done.files.pdf and done.files.original and done.files.similarity_pdf
    assert client.get_file(check.id, "pdf").startswith(b"%PDF")
    assert client.get_file(check.id, "similarity_pdf").startswith(b"%PDF")
    assert client.get_file(check.id, "original")


def test_too_many_uploads_and_slot_freed_after_24h(emulator, emulator_account: str, client: DocCheckClient) -> None:
    for i in range(50):
        client.create_upload(f"f{i}.txt")
    assert emulator.account_state(emulator_account)["waiting_uploads"] == 50
    with pytest.raises(ConflictError) as exc:
        client.create_upload("f50.txt")
    assert_error(exc, 409, "too_many_uploads")
    emulator.advance(24 * 3600 + 1)
    assert emulator.account_state(emulator_account)["waiting_uploads"] == 0
    client.create_upload("again.txt")


def test_expired_upload_url(emulator, client: DocCheckClient) -> None:
    upload = client.create_upload("late.txt")
    emulator.advance(601)
    with pytest.raises(UploadExpiredError) as exc:
        client.put_upload(upload, TEXT.encode())
    assert_error(exc, 403, "upload_url_expired", storage=True)


def test_upload_deleted_after_24h(emulator, client: DocCheckClient) -> None:
    upload = client.create_upload("old.txt")
    client.put_upload(upload, TEXT.encode())
    emulator.advance(24 * 3600 + 1)
    with pytest.raises(NotFoundError) as exc:
        client.create_check(upload_id=upload.upload_id)
    assert_error(exc, 404, "upload_not_found")


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
            received.append((body, dict(self.headers.items())))
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
