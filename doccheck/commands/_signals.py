"""Stopping a command as a scheduler does: SIGTERM (systemd, Kubernetes, a Prefect worker)
ends like Ctrl-C, with one line, the resume hint and exit 143 (128 + 15), never a traceback.

Inside a flow, Prefect's own SIGTERM handler raises ``TerminationSignal`` (the flow run is
marked crashed), then restores the handler it found and sends the signal again so that
handler runs too. :func:`stop_on_signals` installs that handler: it ignores the re-sent
signal while ``TerminationSignal`` is being handled, raises :class:`_Terminated` for a
SIGTERM outside a flow (reading the manifest, writing reports), and exits at once on any
second signal. Whatever the stop then waits for, the process ends
:data:`STOP_DEADLINE_SECONDS` after the first SIGTERM. No Prefect import here: the exception is
recognised by its ``signal``.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

RESUME_HINT = "rerun the same command to resume (nothing is charged twice)"

#: After a SIGTERM the process ends within this many seconds, whatever it is waiting for:
#: within Kubernetes' default grace period (30 s) and systemd's stop timeout (90 s), so a
#: scheduler never has to SIGKILL us. What the run wrote is committed; a rerun resumes it.
STOP_DEADLINE_SECONDS = 25.0

_announced = threading.Event()  # the stop's one line is printed: the deadline adds none


class _Terminated(KeyboardInterrupt):  # noqa: N818 - control flow like KeyboardInterrupt, caught by run_flow
    """A SIGTERM arrived outside a flow (not an ``Exception``, so ``except Exception`` lets it pass).

    A ``KeyboardInterrupt`` because asyncio lets only that and ``SystemExit`` through its
    transports and callbacks: any other exception raised by the handler while the event loop
    was inside a socket write was logged there ("Fatal write error on socket transport", a
    traceback on stderr) instead of stopping the command with its one line."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signum)
        self.signal = signum


class _State:
    first: int | None = None


def exit_code_for(exc: BaseException) -> int | None:
    """128 + the signal for a stop by signal (Ctrl-C: 130, SIGTERM: 143), None otherwise."""
    signum = getattr(exc, "signal", None)
    if isinstance(signum, int) and isinstance(exc, BaseException) and not isinstance(exc, Exception):
        return 128 + signum
    if isinstance(exc, KeyboardInterrupt):
        return 128 + signal.SIGINT
    return None


def stop_message(code: int) -> str:
    """The one line printed for a stop by signal."""
    name = "interrupted" if code == 128 + signal.SIGINT else "stopped (SIGTERM)"
    return f"{name}; {RESUME_HINT}"


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM ends the command like Ctrl-C (and the process by the
    deadline at the latest), a second SIGTERM or SIGINT after the first stop exits at once
    (``os._exit``: no cleanup is waited for), and no unawaited coroutine is reported."""
    state = _State()

    def on_term(signum: int, frame: FrameType | None) -> None:
        if state.first is not None:
            _exit_now(signum)
        state.first = signum
        _exit_by_deadline(signum)
        handling = sys.exc_info()[1]
        if handling is not None and getattr(handling, "signal", None) == signum:
            return  # Prefect re-sends the signal it turned into TerminationSignal: already stopping
        raise _Terminated(signum)

    previous_int = signal.getsignal(signal.SIGINT)

    def on_int(signum: int, frame: FrameType | None) -> None:
        if state.first is not None:
            _exit_now(signum)
        state.first = signum
        if callable(previous_int):
            previous_int(signum, frame)
        else:
            raise KeyboardInterrupt

    try:
        previous_term = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread: leave signals to whoever owns them
        yield
        return
    try:
        with warnings.catch_warnings():
            _quiet_unawaited_coroutines()
            yield
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        if state.first is not None:  # stopping: a second Ctrl-C must not wait for the cleanup
            signal.signal(signal.SIGINT, on_int)


def _quiet_unawaited_coroutines() -> None:
    """A stop by signal raises wherever the main thread is (Prefect's handler inside a flow run,
    ours outside one), also between creating a coroutine and awaiting it; Python then warns, as
    the stack unwinds, that the coroutine was never awaited: two lines on stderr that tell the
    user nothing beside the one line of the stop. The warning is printed before any handler of
    ours could know a stop began, so it is silenced for the whole command."""
    warnings.filterwarnings("ignore", message=r"coroutine .* was never awaited", category=RuntimeWarning)


def exit_after_stop(code: int, cleanup: Callable[[], None], timeout: float = 5.0) -> NoReturn:
    """Run ``cleanup`` (flush Prefect's logs) and the exit handlers (stop a local Prefect
    server) for at most ``timeout`` seconds, then end the
    process with ``code`` without waiting for worker threads still blocked in a request:
    what the run wrote is committed, and a scheduler must not have to SIGKILL us."""

    _announced.set()

    def run() -> None:
        cleanup()
        atexit._run_exitfuncs()  # what a normal exit runs: Prefect stops its local server

    worker = threading.Thread(target=run, name="doccheck-stop-cleanup", daemon=True)
    worker.start()
    worker.join(timeout)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _exit_by_deadline(signum: int) -> None:
    """End the process :data:`STOP_DEADLINE_SECONDS` after the first SIGTERM if it has not ended:
    a stop can hang where no handler of ours runs (asyncio's shutdown joins the threads of a
    flow run; one fresh-clone CI run waited over 60 s there, not reproduced in 40 runs since)."""

    def expire() -> None:
        if not _announced.is_set():
            os.write(2, f"error: {stop_message(128 + signum)}\n".encode())
        os._exit(128 + signum)

    timer = threading.Timer(STOP_DEADLINE_SECONDS, expire)
    timer.daemon = True
    timer.name = "doccheck-stop-deadline"
    timer.start()


def _exit_now(signum: int) -> None:
    os.write(2, f"error: second signal; exiting now. {RESUME_HINT}\n".encode())
    os._exit(128 + signum)


__all__ = [
    "RESUME_HINT",
    "STOP_DEADLINE_SECONDS",
    "exit_after_stop",
    "exit_code_for",
    "stop_message",
    "stop_on_signals",
]
