"""Retry policy: what is retried for which request, Retry-After, deadline, logging."""

from __future__ import annotations

import asyncio
import logging
import time

import httpx
import pytest

from doccheck.client import (
    AsyncDocCheckClient,
    DocCheckClient,
    NetworkError,
    RateLimitError,
    RetryMode,
    RetryPolicy,
    ServerError,
    ValidationError,
)
from doccheck.client._retry import is_retryable
from tests.factories import BASE, CHECK, KEY, Recorder, created, err

FAST = RetryPolicy(max_attempts=4, initial=0.001, max_backoff=0.01, deadline_seconds=5)
UPLOAD = {
    "object": "upload",
    "upload_id": "u1",
    "upload_url": "http://st/u1?sig=x",
    "expires_in": 600,
    "content_type": "text/plain",
}


def boom(exc: type[httpx.TransportError]):
    def raise_(request: httpx.Request) -> httpx.Response:
        raise exc("simulated", request=request)

    return raise_


def client_for(rec: Recorder, retry: RetryPolicy = FAST) -> DocCheckClient:
    return DocCheckClient(BASE, KEY, retry=retry, transport=httpx.MockTransport(rec))


def test_keyed_create_check_retried_on_5xx_and_network() -> None:
    rec = Recorder(err(500, "internal"), boom(httpx.ReadTimeout), err(503, "unavailable"), created())
    check = client_for(rec).create_check(text="a b", idempotency_key="k")
    assert check.id == CHECK["id"] and len(rec.requests) == 4
    assert {r.headers["Idempotency-Key"] for r in rec.requests} == {"k"}


@pytest.mark.parametrize("answer", [err(500, "internal"), err(429, "rate_limited"), boom(httpx.ConnectError)])
def test_create_check_without_key_never_retried(answer: object) -> None:
    rec = Recorder(answer, created())
    with pytest.raises((ServerError, RateLimitError, NetworkError)):
        client_for(rec).create_check(text="a b")
    assert len(rec.requests) == 1


@pytest.mark.parametrize(
    "answer",
    [
        err(429, "rate_limited", **{"Retry-After": "0"}),
        err(503, "unavailable"),
        boom(httpx.ConnectError),
        boom(httpx.ConnectTimeout),
    ],
)
def test_upload_retried_only_when_request_did_no_work(answer: object) -> None:
    rec = Recorder(answer, httpx.Response(201, json=UPLOAD))
    assert client_for(rec).create_upload("a.txt", size_bytes=10).upload_id == "u1"
    assert len(rec.requests) == 2


@pytest.mark.parametrize(
    "answer", [err(500, "internal"), err(502, "bad_gateway"), boom(httpx.ReadTimeout), boom(httpx.RemoteProtocolError)]
)
def test_upload_not_retried_when_it_may_have_been_created(answer: object) -> None:
    rec = Recorder(answer, httpx.Response(201, json=UPLOAD))
    with pytest.raises((ServerError, NetworkError)):
        client_for(rec).create_upload("a.txt")
    assert len(rec.requests) == 1


def test_reads_retried_on_everything_transient() -> None:
    rec = Recorder(boom(httpx.ReadError), err(502, "x"), err(429, "rate_limited"), httpx.Response(200, json=CHECK))
    assert client_for(rec).get_check("a").status == "processing"
    assert len(rec.requests) == 4


def test_client_errors_not_retried() -> None:
    rec = Recorder(err(422, "invalid_input"), created())
    with pytest.raises(ValidationError):
        client_for(rec).create_check(text="", idempotency_key="k")
    assert len(rec.requests) == 1


def test_gives_up_after_max_attempts_with_typed_error() -> None:
    rec = Recorder(err(503, "unavailable", **{"X-Request-Id": "r9"}))
    with pytest.raises(ServerError) as info:
        client_for(rec).get_check("a")
    assert len(rec.requests) == FAST.max_attempts and info.value.request_id == "r9"


def test_retry_after_is_honoured() -> None:
    rec = Recorder(err(429, "rate_limited", **{"Retry-After": "0.3"}), httpx.Response(200, json=CHECK))
    started = time.monotonic()
    client_for(rec, RetryPolicy(max_attempts=3, initial=0.001, max_backoff=0.001)).get_check("a")
    assert time.monotonic() - started >= 0.3
    assert len(rec.requests) == 2


def test_retry_after_is_capped() -> None:
    policy = RetryPolicy(max_retry_after=0.05, initial=0.001)
    error = RateLimitError("x", retry_after=3600, status_code=429)
    assert policy.wait_for(1, error) <= 0.1


def test_deadline_stops_before_sleeping_past_it() -> None:
    rec = Recorder(err(429, "rate_limited", **{"Retry-After": "2"}))
    policy = RetryPolicy(max_attempts=10, initial=0.001, deadline_seconds=1.0)
    started = time.monotonic()
    with pytest.raises(RateLimitError) as info:
        client_for(rec, policy).get_check("a")
    assert time.monotonic() - started < 1.0
    assert len(rec.requests) == 1 and info.value.retry_after == 2.0


def test_the_first_attempts_time_counts_against_the_deadline() -> None:
    """The first attempt runs outside tenacity; the seconds it took (``spent``) are deducted
    from the deadline of the retries that follow, as if one loop had run from the start."""
    from tenacity import Retrying

    from doccheck.client._retry import tenacity_kwargs

    policy = RetryPolicy(max_attempts=10, initial=0.001, max_backoff=0.001, deadline_seconds=1.0)
    for spent, expected in ((0.0, 10), (5.0, 1)):
        calls = 0

        def failing() -> None:
            nonlocal calls
            calls += 1
            raise ServerError("unavailable", status_code=503)

        with pytest.raises(ServerError):
            for attempt in Retrying(**tenacity_kwargs(policy, RetryMode.SAFE, "GET /checks", spent=spent)):
                with attempt:
                    failing()
        assert calls == expected, spent


def test_backoff_grows_and_is_jittered_and_capped() -> None:
    p = RetryPolicy(initial=1.0, max_backoff=8.0)
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (7, 8.0)]:
        waits = {p.backoff(attempt) for _ in range(50)}
        assert all(base / 2 <= w <= base for w in waits)
        assert len(waits) > 1  # jitter


def test_retries_logged_at_debug_with_attempt_number(caplog: pytest.LogCaptureFixture) -> None:
    rec = Recorder(err(503, "unavailable"), httpx.Response(200, json=CHECK))
    with caplog.at_level(logging.DEBUG, logger="doccheck.client"):
        client_for(rec).get_check("a")
    msgs = [r.getMessage() for r in caplog.records if r.name == "doccheck.client"]
    assert any("attempt 1 of 4" in m and "GET /checks/a" in m for m in msgs)
    assert all(KEY not in m for m in msgs)


def test_storage_put_log_has_no_signed_query(caplog: pytest.LogCaptureFixture, tmp_path) -> None:
    from doccheck.client import Upload

    f = tmp_path / "x.txt"
    f.write_text("hello")
    storage = Recorder(err(503, "unavailable"), httpx.Response(200))
    c = DocCheckClient(
        BASE,
        KEY,
        retry=FAST,
        transport=httpx.MockTransport(Recorder(httpx.Response(500))),
        upload_transport=httpx.MockTransport(storage),
    )
    with caplog.at_level(logging.DEBUG, logger="doccheck.client"):
        c.put_upload(Upload(upload_id="u", upload_url="http://st/put/u?sig=SIGNATURE", content_type="text/plain"), f)
    assert len(storage.requests) == 2 and storage.bodies[1] == b"hello"  # file re-read from the start
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "PUT /put/u" in text and "SIGNATURE" not in text


@pytest.mark.parametrize(
    ("error", "mode", "expected"),
    [
        (NetworkError("x", connect=True), RetryMode.NOT_REACHED, True),
        (NetworkError("x", connect=False), RetryMode.NOT_REACHED, False),
        (NetworkError("x", connect=False), RetryMode.SAFE, True),
        (ServerError("x", status_code=503), RetryMode.NOT_REACHED, True),
        (ServerError("x", status_code=500), RetryMode.NOT_REACHED, False),
        (RateLimitError("x", status_code=429), RetryMode.NEVER, False),
        (ValidationError("x", status_code=422), RetryMode.SAFE, False),
    ],
)
def test_is_retryable_table(error: Exception, mode: RetryMode, expected: bool) -> None:
    assert is_retryable(error, mode) is expected


def test_async_retries_same_rules() -> None:
    rec = Recorder(err(500, "internal"), created(), err(500, "internal"))

    async def main() -> None:
        async with AsyncDocCheckClient(BASE, KEY, retry=FAST, transport=httpx.MockTransport(rec)) as c:
            await c.create_check(text="a b", idempotency_key="k")
            with pytest.raises(ServerError):
                await c.create_check(text="a b")

    asyncio.run(main())
    assert len(rec.requests) == 3
