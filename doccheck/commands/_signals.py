"""Stopping a command as a scheduler does: SIGTERM (systemd, Kubernetes, a Prefect worker)
ends like Ctrl-C, with one line, the resume hint and exit 143 (128 + 15), never a traceback.

Inside a flow, Prefect's own SIGTERM handler replaces ours and raises ``TerminationSignal``
(the flow run is marked crashed). Only when that exception passes through Prefect's bridge
does Prefect restore our handler and send the signal again; a SIGTERM that lands while the
event loop waits in ``select`` is raised outside the flow's task, the flow sees a
``CancelledError`` instead, and our handler never runs. :func:`stop_on_signals` installs the
handler for the rest: it ignores the re-sent signal while ``TerminationSignal`` is being
handled, raises :class:`_Terminated` for a SIGTERM outside a flow (reading the manifest,
writing reports), and exits at once on any second signal. Whoever's handler runs, the
process ends :data:`STOP_DEADLINE_SECONDS` after the first SIGTERM: the deadline is armed by
a thread that reads the signal numbers the interpreter's C-level handler writes to
:func:`signal.set_wakeup_fd`, which no Python handler replaces. No Prefect import here: the
exception is recognised by its ``signal``.
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
_deadline_lock = threading.Lock()
_deadline: list[threading.Timer] = []  # the one deadline of this process, once armed
_pipes: dict[int, int] = {}  # our watchers' pipes, write end -> read end: a forked child closes them


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
        _exit_by_deadline(signum)  # the watcher armed it already, unless a library took the wakeup fd
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
        with _deadline_on_any_sigterm(), warnings.catch_warnings():
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


@contextmanager
def _deadline_on_any_sigterm() -> Iterator[None]:
    """Within the block, a SIGTERM arms the deadline whichever Python handler it runs (Prefect's
    raises ``TerminationSignal`` and, when the loop was in ``select``, never hands the signal
    to ours: a flow run whose crash report waited on an unanswering Prefect server then waited
    in asyncio's shutdown for good). The interpreter's C handler writes each caught signal's
    number to the wakeup fd; a thread reads them, arms the deadline on SIGTERM, and passes
    every byte on to the wakeup fd it replaced (asyncio's, if a loop had one)."""
    read_end, write_end = os.pipe()  # not inherited by exec'd children (PEP 446)
    os.set_blocking(write_end, False)  # the C handler must never block
    previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    _pipes[write_end] = read_end
    watcher = threading.Thread(
        target=_watch_wakeups, args=(read_end, previous), name="doccheck-stop-watch", daemon=True
    )
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        del _pipes[write_end]
        os.close(write_end)  # the watcher reads the end of the pipe and closes its own end


def _watch_wakeups(read_end: int, forward_to: int) -> None:
    while chunk := os.read(read_end, 512):  # releases the GIL while it waits
        if signal.SIGTERM in chunk:
            _exit_by_deadline(signal.SIGTERM)
        if forward_to >= 0:
            try:
                os.write(forward_to, chunk)
            except OSError:
                pass  # its owner closed it: nobody waits for these bytes
    os.close(read_end)


def _forget_wakeup_fd_in_child() -> None:
    """A forked child shares our pipes: a SIGTERM sent to it must not arm the parent's deadline,
    and its copies of the write ends must not keep the parent's watchers from reading the end."""
    if not _pipes:
        return
    try:
        current = signal.set_wakeup_fd(-1)
        if current not in _pipes:
            signal.set_wakeup_fd(current)  # not ours: put it back
    except ValueError:
        pass
    for write_end, read_end in _pipes.items():
        os.close(write_end)
        os.close(read_end)
    _pipes.clear()


os.register_at_fork(after_in_child=_forget_wakeup_fd_in_child)


def _exit_by_deadline(signum: int) -> None:
    """End the process :data:`STOP_DEADLINE_SECONDS` after the first SIGTERM if it has not ended:
    a stop can hang where no handler of ours runs (asyncio's shutdown waiting for a flow run's
    crash report to a Prefect server that does not answer). Armed once; later calls do nothing."""

    def expire() -> None:
        _flush_within(1.0)
        if not _announced.is_set():
            os.write(2, f"error: {stop_message(128 + signum)}\n".encode())  # unbuffered: nothing to flush
        os._exit(128 + signum)

    with _deadline_lock:
        if _deadline:
            return
        timer = threading.Timer(STOP_DEADLINE_SECONDS, expire)
        timer.daemon = True
        timer.name = "doccheck-stop-deadline"
        _deadline.append(timer)
    timer.start()


def _flush_within(seconds: float) -> None:
    """Flush what Python still buffers for stdout and stderr, waiting at most ``seconds``: a
    flush waits for the stream's lock, which a main thread stuck in a write may hold for good."""

    def flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe or file: nothing more reaches it
                pass

    flusher = threading.Thread(target=flush, name="doccheck-stop-flush", daemon=True)
    flusher.start()
    flusher.join(seconds)


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
