"""How a batch fails: the errors that stop it, and which of a task group's errors to raise.

Why apart from :mod:`doccheck.pipeline.sending._submitter`: collecting results raises them the same way, and
callers (Prefect retry conditions, the CLI) branch on these classes without importing the submitter.
"""

from __future__ import annotations

from doccheck.client import AuthenticationError, DocCheckError, NetworkError, RateLimitError, ServerError
from doccheck.errors import FatalSubmitError

__all__ = ["TRANSIENT_ERRORS", "error_code", "first_error"]

#: Errors after which the request may succeed later: requeued, never a final failure.
TRANSIENT_ERRORS = (RateLimitError, ServerError, NetworkError)


def error_code(exc: DocCheckError) -> str:
    """The service's error code, else ``http_<status>``, else the exception's class name."""
    return exc.code or (f"http_{exc.status_code}" if exc.status_code else type(exc).__name__)


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The error to raise from a task group: a fatal one if any, else the first.

    Callers (Prefect retry conditions, the CLI) branch on the exception class, which an
    ``ExceptionGroup`` wrapper would hide.
    """
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup) -> None:
        for e in g.exceptions:
            if isinstance(e, BaseExceptionGroup):
                walk(e)
            else:
                leaves.append(e)

    walk(group)
    for exc in leaves:
        if isinstance(exc, (FatalSubmitError, AuthenticationError)):
            return exc
    return leaves[0] if leaves else group
