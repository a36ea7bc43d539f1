"""When and how long to retry a request (tenacity), in one place for both transports.

Whether a failed request may be sent again depends on what it does at the service, so each
request carries a :class:`RetryMode`:

* ``SAFE`` - reads, PUT/DELETE of the webhook, the storage PUT (idempotent by nature) and
  ``POST /checks`` WITH an Idempotency-Key (the service replays the original check instead
  of creating and charging a second one): retried on network errors, 429 and 5xx.
* ``NOT_REACHED`` - ``POST /uploads`` and ``POST /webhook/rotate``: each success has a cost
  (a waiting-upload slot out of 50, a secret that invalidates the previous one), and the
  service offers no key to make them idempotent. They are retried only when the request
  provably did no work: a connect-phase network error (nothing was sent), a 429 (the rate
  limiter answers before the handler) or a 503 (not accepting work). A read timeout or a 500
  may come after the upload was created, so it is surfaced instead of leaking a slot.
* ``NEVER`` - ``POST /checks`` without an Idempotency-Key: a retry could create and bill a
  second check, so the first error is final.
"""

from __future__ import annotations

import enum
import logging
import random
from dataclasses import dataclass
from typing import Any

from tenacity import (
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
)

from doccheck.client.assumptions import NOT_REACHED_STATUSES
from doccheck.errors import NetworkError, RateLimitError, ServerError

logger = logging.getLogger("doccheck.client")


class RetryMode(enum.Enum):
    """How a request may be retried; see the module docstring for the reasoning."""

    SAFE = "safe"
    NOT_REACHED = "not_reached"
    NEVER = "never"


@dataclass(frozen=True)
class RetryPolicy:
    """Retry budget: at most ``max_attempts`` tries and ``deadline_seconds`` in total
    (no sleep is started that would end past the deadline). Backoff is exponential from
    ``initial`` doubling up to ``max_backoff``, with "equal jitter" (half fixed, half
    random) so that many workers do not retry in lock-step. A server ``Retry-After`` is
    honoured, capped at ``max_retry_after`` so a hostile or buggy value cannot park a run.
    ``RetryPolicy(max_attempts=1)`` disables retries."""

    max_attempts: int = 5
    initial: float = 0.5
    max_backoff: float = 8.0
    deadline_seconds: float = 60.0
    max_retry_after: float = 30.0

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after the ``attempt``-th failure (1-based), jittered."""
        base = min(self.max_backoff, self.initial * (2 ** max(0, attempt - 1)))
        delay: float = base / 2 + random.uniform(0, base / 2)
        return delay

    def wait_for(self, attempt: int, error: BaseException | None) -> float:
        """Wait before the next try: the server's Retry-After if it gave one, else backoff."""
        if isinstance(error, RateLimitError) and error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.max_retry_after) + random.uniform(0, 0.05)
        return self.backoff(attempt)


def is_retryable(error: BaseException, mode: RetryMode) -> bool:
    """Whether ``error`` may be retried for a request of ``mode``."""
    if mode is RetryMode.NEVER:
        return False
    if isinstance(error, NetworkError):
        return mode is RetryMode.SAFE or error.connect
    if isinstance(error, (RateLimitError, ServerError)):
        if mode is RetryMode.SAFE:
            return True
        return error.status_code in NOT_REACHED_STATUSES
    return False


def first_failure_retryable(error: BaseException, policy: RetryPolicy, mode: RetryMode) -> bool:
    """Whether a request's first failure should go on to tenacity's retries.

    Why a first attempt outside tenacity: building and driving ``Retrying`` costs ~0.05 ms
    a request, a measurable share of the submit path's CPU (issue 10), and nearly every
    request succeeds the first time. A first failure is handed to :func:`tenacity_kwargs`
    (with the seconds it took as ``spent``) and replayed as tenacity's attempt 1, so the
    waits, the deadline, the logs and the final error are those of a loop from the start.
    """
    return policy.max_attempts > 1 and is_retryable(error, mode)


def tenacity_kwargs(policy: RetryPolicy, mode: RetryMode, what: str, *, spent: float = 0.0) -> dict[str, Any]:
    """Keyword arguments for ``tenacity.Retrying`` / ``AsyncRetrying`` for one request.

    ``what`` ("POST /checks") is only used in the debug log; it never contains a query
    string (signed upload URLs carry their signature there) nor a header. ``spent``: seconds
    the request's attempts took before this loop started (deducted from the deadline).
    """

    def _wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        return policy.wait_for(state.attempt_number, error)

    def _log(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        sleep = state.next_action.sleep if state.next_action else 0.0
        logger.debug(
            "retrying %s: attempt %d of %d failed with %s; next try in %.2fs",
            what,
            state.attempt_number,
            policy.max_attempts,
            error,
            sleep,
        )

    return {
        "stop": stop_after_attempt(max(1, policy.max_attempts)) | stop_before_delay(policy.deadline_seconds - spent),
        "wait": _wait,
        "retry": retry_if_exception(lambda e: is_retryable(e, mode)),
        "before_sleep": _log,
        "reraise": True,
    }
