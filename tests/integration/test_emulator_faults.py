"""Injected faults and the control surface, over real sockets."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.factories import assert_service_error as assert_error
from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration


def test_error_rate_answers_5xx_before_doing_any_work(emulator_faults: EmulatorHandle, emulator_account: str) -> None:
    emu = emulator_faults
    assert emu.set_faults(error_rate=1.0)["error_rate"] == 1.0
    with emu.client(emulator_account) as c:
        for _ in range(6):
            r = c.post("/checks", json={"text": "retry me safely"}, headers={"Idempotency-Key": "k1"})
            assert r.status_code in (500, 503)
            assert r.json()["error"]["code"] in ("internal_error", "service_unavailable")
        assert emu.account_state(emulator_account)["checks"] == 0
        assert emu.account_state(emulator_account)["charged_cents"] == 0
        # the control surface and the OpenAPI description are not affected
        assert httpx.get(f"{emu.base_url}/openapi.json", trust_env=False).status_code == 200
        emu.reset_faults()
        assert c.post("/checks", json={"text": "retry me safely"}, headers={"Idempotency-Key": "k1"}).status_code == 201


def test_rate_limit_per_account_with_retry_after(emulator_faults: EmulatorHandle) -> None:
    emu = emulator_faults
    a, b = emu.new_account(), emu.new_account()
    emu.set_faults(rate_limit_per_s=3)
    with emu.client(a) as ca, emu.client(b) as cb:
        statuses = [ca.get("/checks").status_code for _ in range(5)]
        assert statuses[:3] == [200, 200, 200] and 429 in statuses[3:]
        limited = ca.get("/checks")
        assert_error(limited, 429, "rate_limited")
        assert int(limited.headers["Retry-After"]) >= 1
        assert cb.get("/checks").status_code == 200  # another account has its own budget


def test_latency_is_added(emulator_faults: EmulatorHandle, emulator_account: str) -> None:
    emu = emulator_faults
    emu.set_faults(latency_ms=300)
    with emu.client(emulator_account) as c:
        started = time.monotonic()
        assert c.get("/checks").status_code == 200
        assert time.monotonic() - started >= 0.3


def test_fault_settings_are_validated_and_partial(emulator_faults: EmulatorHandle) -> None:
    emu = emulator_faults
    before = emu.set_faults()
    after = emu.set_faults(webhook_drop_rate=0.25)
    assert after == {**before, "webhook_drop_rate": 0.25}
    for bad in ({"error_rate": 2}, {"nope": 1}, {"latency_ms": -1}, {"processing_seconds": "x"}):
        r = httpx.post(f"{emu.root_url}/_emulator/faults", json=bad, trust_env=False)
        assert_error(r, 422, "invalid_input")
    assert emu.reset_faults() == {**before, "webhook_drop_rate": 0.0}
    r = httpx.post(f"{emu.root_url}/_emulator/clock/advance", json={"seconds": -5}, trust_env=False)
    assert_error(r, 422, "invalid_input")
    r = httpx.post(f"{emu.root_url}/_emulator/accounts", json={"api_key": emu.api_key}, trust_env=False)
    assert r.status_code == 409


def test_state_shape(emulator: EmulatorHandle, emulator_account: str) -> None:
    state = emulator.state()
    assert set(state["accounts"][emulator_account]) >= {"balance_cents", "checks", "charged_cents", "waiting_uploads"}
    assert isinstance(state["deliveries"], list)


def test_seeded_faults_are_reproducible(emulator_faults: EmulatorHandle, emulator_account: str) -> None:
    emu = emulator_faults
    runs = []
    with emu.client(emulator_account) as c:
        for _ in range(2):
            emu.set_faults(seed=7, error_rate=0.5)
            runs.append([c.get("/checks").status_code for _ in range(30)])
    assert runs[0] == runs[1]
    assert {200} < set(runs[0]) and set(runs[0]) <= {200, 500, 503}
