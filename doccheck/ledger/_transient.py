"""Database blips: a PostgreSQL restart or a locked SQLite file costs seconds, not the step.

A one-second PostgreSQL restart used to fail the submit step at once (the pooled connections
were dead); the task's retry then waited out its own claims' lease (two silent minutes).
:func:`retry_transient` runs a ledger call again, with a fresh connection (the engine pings
its pooled connections and reconnects), backing off from 0.2 s to 2 s for at most
:data:`RETRY_SECONDS`, when the error is a lost or refused connection (not a constraint, not
a full disk, not a syntax error: those fail at once). Each retried call is one whole
transaction of the ledger (``with engine.begin()``), so it is replayed from its start; the
ledger's writes are set-to-value updates and idempotent inserts, so replaying a transaction
whose commit was in fact applied writes the same rows again.

While it waits, :func:`on_wait` listeners (the command's progress bar) are told "waiting for
the database", and a warning is logged (the Prefect UI shows it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_delay,
    wait_exponential_jitter,
)

__all__ = ["RETRY_SECONDS", "is_transient", "on_wait", "retry_transient", "retry_transient_async"]

log = logging.getLogger("doccheck.ledger")

T = TypeVar("T")

#: How long a ledger call keeps retrying a lost database before its error stands.
RETRY_SECONDS = 20.0

#: PostgreSQL SQLSTATEs of a connection lost or refused for a while: class 08 (connection
#: exception), 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now (starting up).
_PG_STATES = ("08", "57P01", "57P02", "57P03")
_TRANSIENT_TEXT = (
    "database is locked",  # SQLite, after its own busy timeout
    "server closed the connection",
    "connection refused",
    "could not connect",
    "terminating connection",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "connection is closed",
    "consuming input failed",
    "connection reset",
    "broken pipe",
    "ssl syscall error",
    "connection timed out",
)

_RETRY = retry_if_exception(lambda exc: is_transient(exc))
_BACKOFF = wait_exponential_jitter(initial=0.2, max=2.0, jitter=0.2)

_listeners: list[Callable[[str | None], None]] = []
_listeners_lock = threading.Lock()


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a database connection that was lost or refused for a while."""
    if isinstance(exc, DisconnectionError):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    state = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if isinstance(state, str) and state.startswith(_PG_STATES):
        return True
    text = str(exc.orig).lower()
    return any(fragment in text for fragment in _TRANSIENT_TEXT)


def on_wait(listener: Callable[[str | None], None]) -> Callable[[], None]:
    """Call ``listener(reason)`` when a ledger call starts waiting for the database and
    ``listener(None)`` when it got through; returns the function that removes it."""
    with _listeners_lock:
        _listeners.append(listener)

    def remove() -> None:
        with _listeners_lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return remove


def retry_transient(fn: Callable[[], T], *, seconds: float = RETRY_SECONDS) -> T:
    """``fn()``, called again on a transient database error for up to ``seconds``."""
    wait = _Wait(seconds)
    try:
        result = Retrying(retry=_RETRY, wait=_BACKOFF, stop=stop_after_delay(seconds), before_sleep=wait.before_sleep,
                          reraise=True)(fn)  # fmt: skip
    except BaseException:
        wait.over(ok=False)
        raise
    wait.over(ok=True)
    return result


async def retry_transient_async(fn: Callable[[], Awaitable[T]], *, seconds: float = RETRY_SECONDS) -> T:
    """``await fn()``, awaited again on a transient database error for up to ``seconds``
    (the wait sleeps without blocking the event loop)."""
    wait = _Wait(seconds)
    try:
        retrying = AsyncRetrying(retry=_RETRY, wait=_BACKOFF, stop=stop_after_delay(seconds),
                                 before_sleep=wait.before_sleep, reraise=True)  # fmt: skip
        result: T = await retrying(fn)
    except BaseException:
        wait.over(ok=False)
        raise
    wait.over(ok=True)
    return result


class _Wait:
    """The retry policy of one call, and what is said while it waits."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.waited = False

    def before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        reason = _short(exc)
        if not self.waited:
            log.warning("waiting for the database (%s): retrying for up to %.0f s", reason, self.seconds)
        self.waited = True
        _tell(reason)

    def over(self, *, ok: bool) -> None:
        if self.waited:
            if ok:
                log.info("the database answers again")
            _tell(None)


def _tell(reason: str | None) -> None:
    with _listeners_lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(reason)
        except Exception:  # noqa: BLE001 - a progress display never sinks a ledger call
            log.debug("database wait listener failed", exc_info=True)


def _short(exc: BaseException | None) -> str:
    """The driver's first line, without SQLAlchemy's statement and background link."""
    if exc is None:
        return "no answer"
    orig = getattr(exc, "orig", None) or exc
    line = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return line[:160]
