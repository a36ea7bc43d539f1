"""Database blips: which errors are retried inside the step, that the wait is said, and that a
retried batch keeps its claim owner and counts its own earlier new checks as new."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import DisconnectionError, IntegrityError, OperationalError

from doccheck.ledger import Ledger, is_transient, on_wait, retry_transient
from doccheck.pipeline import BatchResult, SubmitOptions
from doccheck.pipeline.sending._attempts import begin_attempt, count_done, end_attempt


class _PgError(Exception):
    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def _operational(message: str, sqlstate: str | None = None) -> OperationalError:
    return OperationalError("UPDATE submission_claims ...", {}, _PgError(message, sqlstate))


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (_operational("server closed the connection unexpectedly"), True),
        (_operational("connection failed: Connection refused"), True),
        (_operational("terminating connection due to administrator command", "57P01"), True),
        (_operational("the database system is starting up", "57P03"), True),
        (_operational("whatever the driver says", "08006"), True),
        (_operational("database is locked"), True),  # SQLite, after its busy timeout
        (DisconnectionError("pool ping failed"), True),
        (_operational("database or disk is full"), False),  # the environment: named, not retried
        (_operational('relation "runs" does not exist', "42P01"), False),
        (IntegrityError("INSERT ...", {}, _PgError("duplicate key", "23505")), False),
        (ValueError("not a database error"), False),
    ],
)
def test_only_a_lost_or_refused_connection_is_transient(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


def test_a_transient_error_is_retried_and_the_wait_is_said(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []
    heard: list[str | None] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise _operational("server closed the connection unexpectedly")
        return "recorded"

    remove = on_wait(heard.append)
    try:
        with caplog.at_level("WARNING", logger="doccheck.ledger"):
            assert retry_transient(flaky) == "recorded"
    finally:
        remove()
    assert len(calls) == 3
    assert heard[0] == "server closed the connection unexpectedly" and heard[-1] is None
    assert caplog.text.count("waiting for the database") == 1


def test_other_errors_and_a_long_outage_are_not_hidden() -> None:
    calls: list[int] = []

    def refused() -> None:
        calls.append(1)
        raise IntegrityError("INSERT ...", {}, _PgError("duplicate key", "23505"))

    with pytest.raises(IntegrityError):
        retry_transient(refused)
    assert len(calls) == 1
    with pytest.raises(OperationalError):  # bounded: the error stands after ``seconds``
        retry_transient(lambda: (_ for _ in ()).throw(_operational("connection refused")), seconds=0.3)


def test_a_retried_batch_keeps_its_owner_and_its_new_checks() -> None:
    keys = ["k1", "k2", "k3"]
    first = begin_attempt("run-a", keys)
    first.created["k1"] = 7  # the first attempt made k1's check (7 cents), then failed
    end_attempt(first)
    other_batch = begin_attempt("run-a", ["k9"])
    other_run = begin_attempt("run-b", keys)
    retry = begin_attempt("run-a", keys)
    assert retry.owner == first.owner  # holds its predecessor's claims at once
    assert other_batch.owner != first.owner and other_run.owner != first.owner
    result = BatchResult()
    count_done(result, retry, "k1")  # found ``submitted``: by this batch's first attempt
    count_done(result, retry, "k1")  # a second row with the same content: one check
    count_done(result, retry, "k2")  # submitted by someone else
    assert (result.submitted, result.cost_cents, result.already_done) == (1, 7, 2)


def test_a_retry_takes_its_predecessors_claims_without_waiting() -> None:
    ledger = Ledger("sqlite://")
    try:
        first = begin_attempt("run-c", ["key"])
        assert ledger.claim("key", first.owner)  # then the attempt failed, its claim not released
        end_attempt(first)
        assert not ledger.claim("key", begin_attempt("run-c", ["other"]).owner)  # another batch waits
        assert ledger.claim("key", begin_attempt("run-c", ["key"]).owner)  # the retry holds it at once
    finally:
        ledger.close()


def test_the_async_retry_waits_without_blocking_the_loop() -> None:
    import asyncio

    from doccheck.ledger import retry_transient_async

    calls: list[int] = []
    ticks: list[int] = []

    async def flaky_round() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise _operational("the database system is starting up", "57P03")
        return "counted"

    async def ticker() -> None:
        while True:
            ticks.append(1)
            await asyncio.sleep(0.01)

    async def main() -> str:
        beat = asyncio.create_task(ticker())
        try:
            return await retry_transient_async(flaky_round)
        finally:
            beat.cancel()

    assert asyncio.run(main()) == "counted" and len(calls) == 3
    assert len(ticks) > 5  # the event loop ran while the round waited for the database


def test_a_failed_batch_retried_in_this_process_counts_its_own_checks_as_new(ledger: Ledger) -> None:
    from doccheck.client import AuthenticationError
    from doccheck.pipeline import FatalSubmitError, submit_batch
    from tests.fakes import FakeClient, docs, run

    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    client.fail["d3"] = AuthenticationError("key revoked", status_code=401, code="unauthorized")
    with pytest.raises(FatalSubmitError):  # the batch task fails after d1 and d2 made their checks
        run(submit_batch(client, ledger, run_id, docs(6), SubmitOptions(concurrency=1)))
    made = sum(1 for call in client.calls if call.startswith("submit"))
    client.fail.clear()
    retry = run(
        submit_batch(client, ledger, run_id, docs(6), SubmitOptions(concurrency=1))
    )  # Prefect's retry of the task
    assert (retry.submitted, retry.cost_cents, retry.already_done) == (6, 6, 0)  # what this run created
    assert sum(1 for call in client.calls if call.startswith("submit")) == made + 4  # d3..d6: d1, d2 not again
    rerun = run(submit_batch(client, ledger, ledger.start_run(campaign="c1"), docs(6)))  # another run
    assert (rerun.submitted, rerun.already_done) == (0, 6)
