"""Which task failures are worth a retry.

Why: a task retry repeats a whole batch. That is safe (every submission carries its
deterministic Idempotency-Key and the ledger skips what is already submitted) but only
useful when the failure is transient: the network, a 5xx, a rate limit, a locked or
briefly unreachable database. A bad API key, a bad manifest or an empty balance fail the
same way every time, so retrying them only delays the one-line error the user needs.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import DBAPIError, OperationalError

from doccheck.client import NetworkError, RateLimitError, ServerError
from doccheck.pipeline import TASK_RETRY_DELAYS

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    NetworkError,
    RateLimitError,
    ServerError,
    OperationalError,
    TimeoutError,
    ConnectionError,
)

#: Delays (seconds) between the attempts of a retried task (``doccheck config`` adds them up).
RETRY_DELAYS: list[float] = list(TASK_RETRY_DELAYS)


def is_transient(exc: BaseException | None) -> bool:
    """True for failures that may succeed when tried again (see module docstring)."""
    if exc is None:
        return False
    if isinstance(exc, DBAPIError) and not isinstance(exc, OperationalError):
        return bool(exc.connection_invalidated)
    return isinstance(exc, TRANSIENT_ERRORS)


def retry_on_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry only when the failure is transient.

    Prefect wraps the raised exception in a ``Failed`` state whose ``data`` is the
    exception itself.
    """
    data = getattr(state, "data", None)
    retry = is_transient(data if isinstance(data, BaseException) else None)
    if retry:
        # DEBUG: a retry is routine (Prefect itself logs the new attempt at INFO); the
        # exception's type says why, its message may quote the service and stays out.
        try:
            from prefect.logging import get_run_logger

            get_run_logger().debug("transient %s: the task will be retried", type(data).__name__)
        except Exception:  # noqa: BLE001 - no run context (unit tests): nothing to log to
            pass
    return retry
