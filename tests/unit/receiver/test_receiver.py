"""The receiver app in-process (Starlette TestClient): status codes, dedup, no reflection."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

with warnings.catch_warnings():  # starlette 1.x nags about httpx; the in-process client is fine
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from doccheck.ledger import Ledger
from doccheck.receiver._delivery_app import create_app
from doccheck.webhooks import SecretFile, file_secrets_provider, sign
from tests.fixtures.events import event_body

SECRET = "whsec_unit_test_secret_value"


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(f"sqlite:///{tmp_path / 'r.db'}")
    yield led
    led.close()


@pytest.fixture
def secret_file(tmp_path: Path) -> SecretFile:
    return SecretFile(tmp_path / "secrets" / "webhook.json")


@pytest.fixture
def client(ledger: Ledger, secret_file: SecretFile) -> Iterator[TestClient]:
    secret_file.store(SECRET)
    app = create_app(ledger, file_secrets_provider(secret_file.path), max_body_bytes=4096)
    with TestClient(app) as c:
        yield c


def post(client: TestClient, body: bytes, header: str | None) -> object:
    headers = {"Content-Type": "application/json"}
    if header is not None:
        headers["Service-Signature"] = header
    return client.post("/webhook", content=body, headers=headers)


def test_healthz(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_valid_delivery_stored_once(client: TestClient, ledger: Ledger) -> None:
    body = event_body()
    first = post(client, body, sign(body, SECRET))
    again = post(client, body, sign(body, SECRET))
    assert first.status_code == 200 and first.json() == {"received": True, "duplicate": False}
    assert again.status_code == 200 and again.json()["duplicate"] is True
    [event] = ledger.events()
    assert event.event_id == "evt_1" and event.check_id == "chk_1" and event.product == "ai"


@pytest.mark.parametrize(
    ("header", "status", "code"),
    [
        (None, 400, "missing_signature"),
        ("garbage", 400, "malformed_signature"),
        ("t=abc,v1=" + "0" * 64, 400, "malformed_signature"),
        ("t=123,v1=short", 400, "malformed_signature"),
    ],
)
def test_bad_headers(client: TestClient, ledger: Ledger, header: str | None, status: int, code: str) -> None:
    r = post(client, event_body(), header)
    assert r.status_code == status and r.json()["error"]["code"] == code
    assert ledger.events() == []


def test_wrong_secret_and_stale_and_tampered(client: TestClient, ledger: Ledger) -> None:
    body = event_body()
    wrong = post(client, body, sign(body, "whsec_other"))
    stale = post(client, body, sign(body, SECRET, timestamp=int(time.time()) - 301 - 5))
    future = post(client, body, sign(body, SECRET, timestamp=int(time.time()) + 400))
    tampered = post(client, body.replace(b"chk_1", b"chk_2"), sign(body, SECRET))
    assert [r.status_code for r in (wrong, stale, future, tampered)] == [401, 401, 401, 401]
    assert stale.json()["error"]["code"] == "stale_signature"
    assert wrong.json()["error"]["code"] == "invalid_signature"
    for r in (wrong, stale, tampered):
        assert SECRET not in r.text and "chk_" not in r.text
    assert ledger.events() == []


def test_oversize_body_413(client: TestClient, ledger: Ledger) -> None:
    body = b"{" + b" " * 5000 + b"}"
    r = post(client, body, sign(body, SECRET))
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: refused while streaming
        for _ in range(10):
            yield b" " * 1000

    r = client.post("/webhook", content=chunks(), headers={"Service-Signature": sign(b"x", SECRET)})
    assert r.status_code == 413
    assert ledger.events() == []


def test_signed_but_invalid_event_400(client: TestClient) -> None:
    for body in (b"not json", b"[1,2]", b'{"id": "e"}'):
        r = post(client, body, sign(body, SECRET))
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_event"
        assert "not json" not in r.text


def test_no_secret_configured_503(ledger: Ledger, secret_file: SecretFile) -> None:
    app = create_app(ledger, file_secrets_provider(secret_file.path))
    with TestClient(app) as c:
        body = event_body()
        r = post(c, body, sign(body, SECRET))
    assert r.status_code == 503


def test_rotation_without_restart(client: TestClient, ledger: Ledger, secret_file: SecretFile) -> None:
    secret_file.store("whsec_rotated")
    old, new = event_body("evt_old"), event_body("evt_new")
    assert post(client, old, sign(old, SECRET)).status_code == 200  # previous secret still accepted
    assert post(client, new, sign(new, SecretStr("whsec_rotated"))).status_code == 200
    assert {e.event_id for e in ledger.events()} == {"evt_old", "evt_new"}


def test_env_secrets_provider(ledger: Ledger) -> None:
    app = create_app(ledger, lambda: [SecretStr("a"), SecretStr("b")])
    with TestClient(app) as c:
        body = event_body()
        assert post(c, body, sign(body, "b")).status_code == 200


def test_get_on_webhook_is_405(client: TestClient) -> None:
    assert client.get("/webhook").status_code == 405


def test_secret_file_opened_to_others_is_503_without_traceback(
    client: TestClient, secret_file: SecretFile, caplog: pytest.LogCaptureFixture
) -> None:
    secret_file.path.chmod(0o644)
    body = event_body("evt_open")
    r = post(client, body, sign(body, SECRET))
    assert r.status_code == 503 and SECRET not in r.text
    assert "chmod 600" in caplog.text and "Traceback" not in caplog.text and SECRET not in caplog.text


def test_default_ports_of_receiver_and_emulator_do_not_collide() -> None:
    import inspect

    from doccheck.emulator import EmulatorConfig, emulator
    from doccheck.receiver import receiver

    emulator_default = inspect.signature(emulator).parameters["port"].default
    receiver_default = inspect.signature(receiver).parameters["port"].default
    # the emulator's storage origin listens on its port + 1 unless told otherwise
    taken = {emulator_default, emulator_default + 1, EmulatorConfig().port, EmulatorConfig().storage_port}
    assert receiver_default not in taken, (receiver_default, taken)
