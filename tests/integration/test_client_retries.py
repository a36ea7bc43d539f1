"""Retries against injected faults: no duplicate check, no duplicate charge, Retry-After, deadline."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator

import pytest

from doccheck.client import DocCheckClient, NetworkError, RateLimitError, RetryPolicy, ServerError, TextDocument

pytestmark = pytest.mark.integration

TEXT = "A short essay about rivers, bridges and the towns that grew around them over centuries."
FAST = RetryPolicy(max_attempts=12, initial=0.01, max_backoff=0.05, deadline_seconds=20)


@pytest.fixture
def client(emulator_faults, emulator_account: str) -> Iterator[DocCheckClient]:
    with DocCheckClient(emulator_faults.base_url, emulator_account, retry=FAST) as c:
        yield c


def test_error_rate_no_duplicate_check_or_charge(
    emulator_faults, emulator_account: str, client: DocCheckClient
) -> None:
    emulator_faults.set_faults(error_rate=0.5)
    first = [client.submit(TextDocument(f"{TEXT} {i}"), products=["ai"], idempotency_key=f"row-{i}") for i in range(8)]
    # a rerun of the same rows (as after a crash) with the same keys
    again = [client.submit(TextDocument(f"{TEXT} {i}"), products=["ai"], idempotency_key=f"row-{i}") for i in range(8)]
    emulator_faults.reset_faults()
    assert [s.check.id for s in again] == [s.check.id for s in first]
    assert all(s.replayed for s in again)
    state = emulator_faults.account_state(emulator_account)
    assert state["checks"] == 8
    assert state["charged_cents"] == sum(s.check.cost.total_cents for s in first)
    assert len(client.list_checks(limit=100).data) == 8


def test_lost_response_retry_replays(emulator_faults, emulator_account: str) -> None:
    """A timeout after the request reached the service is the case the key exists for."""
    emulator_faults.set_faults(latency_ms=800)
    policy = RetryPolicy(max_attempts=3, initial=0.01, max_backoff=0.01, deadline_seconds=20)
    with (
        DocCheckClient(emulator_faults.base_url, emulator_account, retry=policy, timeout=0.3) as c,
        pytest.raises(NetworkError) as lost,
    ):
        c.create_check(text=TEXT, idempotency_key="lost-1")  # every attempt times out
    # a read timeout: the request reached the service, so it is not a connect-phase failure
    assert "Timeout" in str(lost.value) and lost.value.connect is False and lost.value.status_code is None
    emulator_faults.reset_faults()
    with DocCheckClient(emulator_faults.base_url, emulator_account, retry=policy) as c:
        check = c.create_check(text=TEXT, idempotency_key="lost-1")
    state = emulator_faults.account_state(emulator_account)
    assert state["checks"] == 1 and state["charged_cents"] == check.cost.total_cents


def test_retry_after_honoured(emulator_faults, client: DocCheckClient, caplog: pytest.LogCaptureFixture) -> None:
    emulator_faults.set_faults(rate_limit_per_s=2)
    started = time.monotonic()
    with caplog.at_level(logging.DEBUG, logger="doccheck.client"):
        for _ in range(5):
            client.list_checks(limit=1)
    elapsed = time.monotonic() - started
    waits = [float(m) for r in caplog.records for m in re.findall(r"next try in ([0-9.]+)s", r.getMessage())]
    assert waits, "the client was rate limited at least once and retried"
    assert all(w >= 1.0 for w in waits), waits  # Retry-After: 1 (integer seconds), never less
    assert elapsed >= 1.0
    assert any("429" in r.getMessage() and "attempt 1" in r.getMessage() for r in caplog.records)


def test_final_typed_error_after_deadline(emulator_faults, emulator_account: str) -> None:
    emulator_faults.set_faults(error_rate=1.0)
    policy = RetryPolicy(max_attempts=1000, initial=0.05, max_backoff=0.1, deadline_seconds=0.8)
    started = time.monotonic()
    with (
        DocCheckClient(emulator_faults.base_url, emulator_account, retry=policy) as c,
        pytest.raises(ServerError) as exc,
    ):
        c.get_check("00000000-0000-4000-8000-000000000000")
    assert time.monotonic() - started < 3.0
    assert exc.value.status_code in (500, 503) and exc.value.request_id


def test_rate_limit_final_error_when_budget_exhausted(emulator_faults, emulator_account: str) -> None:
    emulator_faults.set_faults(rate_limit_per_s=1)
    policy = RetryPolicy(max_attempts=5, initial=0.01, deadline_seconds=0.5)  # Retry-After 1 s > deadline
    with DocCheckClient(emulator_faults.base_url, emulator_account, retry=policy) as c:
        c.list_checks()
        started = time.monotonic()
        with pytest.raises(RateLimitError):
            c.list_checks()
        assert time.monotonic() - started < 0.5  # did not sleep past the deadline


def test_uploads_not_retried_on_500_no_leaked_slot(
    emulator_faults, emulator_account: str, client: DocCheckClient
) -> None:
    """Uploads are retried only on 429/503/connect; the waiting count equals the uploads we got."""
    emulator_faults.set_faults(error_rate=0.5)
    got, failed = 0, 0
    for i in range(12):
        try:
            client.create_upload(f"f{i}.txt")
            got += 1
        except ServerError as e:
            assert e.status_code == 500
            failed += 1
    emulator_faults.reset_faults()
    assert emulator_faults.account_state(emulator_account)["waiting_uploads"] == got
    assert got + failed == 12


def test_connect_errors_retried_then_typed(caplog: pytest.LogCaptureFixture) -> None:
    """Nothing listens on the port: connect errors are retried even for an upload, then raised."""
    import socket

    from doccheck.client import NetworkError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    policy = RetryPolicy(max_attempts=3, initial=0.01, max_backoff=0.01, deadline_seconds=5)
    with (
        DocCheckClient(f"http://127.0.0.1:{port}/api/v1", "sk_test_x", retry=policy) as c,
        caplog.at_level(logging.DEBUG, logger="doccheck.client"),
        pytest.raises(NetworkError) as exc,
    ):
        c.create_upload("a.txt")
    assert exc.value.connect and exc.value.status_code is None
    assert "sk_test_x" not in str(exc.value)
    retries = [r for r in caplog.records if "retrying POST /uploads" in r.getMessage()]
    assert [("attempt 1" in retries[0].getMessage()), ("attempt 2" in retries[1].getMessage())] == [True, True]
    assert len(retries) == 2
