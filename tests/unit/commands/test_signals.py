"""A stop by signal: the exit code names the signal, and asyncio lets SIGTERM's exception
through a socket write instead of logging it as a fatal transport error."""

from __future__ import annotations

import asyncio
import signal
import socket

import pytest

from doccheck.commands._signals import _Terminated, exit_code_for


def test_exit_codes_name_the_signal() -> None:
    assert exit_code_for(_Terminated(signal.SIGTERM)) == 143
    assert exit_code_for(KeyboardInterrupt()) == 130
    assert exit_code_for(RuntimeError("boom")) is None


def test_a_sigterm_raised_inside_a_socket_write_stops_the_loop_without_a_logged_error() -> None:
    """The handler raises wherever the main thread is; in a transport's ``send`` asyncio
    logs anything but KeyboardInterrupt and SystemExit as "Fatal write error"."""
    logged: list[dict[str, object]] = []
    left, right = socket.socketpair()

    class Raising(socket.socket):
        def send(self, *_args: object, **_kwargs: object) -> int:
            raise _Terminated(signal.SIGTERM)

    raising = Raising(fileno=left.detach())

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: logged.append(context))
        _reader, writer = await asyncio.open_connection(sock=raising)
        writer.write(b"x")
        await asyncio.sleep(1)

    try:
        with pytest.raises(_Terminated):
            asyncio.run(main())
    finally:
        raising.close()
        right.close()
    assert not logged, logged


def test_a_coroutine_the_stop_dropped_unawaited_prints_nothing() -> None:
    """Prefect's handler raised TerminationSignal between httpcore creating a coroutine and
    awaiting it: "coroutine ... was never awaited" reached stderr beside the stop's one line
    (test_cli_signals' SIGTERM while submitting, 1 run in 11 under two busy loops)."""
    import gc
    import warnings

    from doccheck.commands._signals import stop_on_signals

    async def send_body() -> None:
        return None

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with stop_on_signals():
            dropped = send_body()
            del dropped
            gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)], caught


def test_a_stop_that_hangs_ends_by_its_deadline_with_the_one_line() -> None:
    """Whatever the process waits for after a SIGTERM (a shutdown joining stuck threads), it
    ends with 143 and the stop's one line once the deadline passes."""
    import subprocess
    import sys
    import time

    code = (
        "import os, signal, time\n"
        "import doccheck.commands._signals as s\n"
        "s.STOP_DEADLINE_SECONDS = 1.0\n"
        "with s.stop_on_signals():\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(5)\n"
        "    except BaseException:\n"
        "        pass\n"
        "    time.sleep(60)  # a shutdown that never ends\n"
    )
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 143, out
    assert time.monotonic() - started < 30
    assert out.stderr.strip().splitlines() == [
        "error: stopped (SIGTERM); rerun the same command to resume (nothing is charged twice)"
    ]


def test_a_sigterm_prefect_keeps_from_our_handler_still_ends_by_the_deadline() -> None:
    """A flow run's SIGTERM lands while the event loop waits in ``select``: Prefect's bridge
    (``capture_sigterm``, the flow engine's) raises ``TerminationSignal`` outside the flow's
    task, asyncio's shutdown cancels the task, and the bridge, seeing a ``CancelledError``,
    never hands the signal to our handler. The flow's crash report then waited on a Prefect
    server that did not answer (a fresh-clone CI run: alive 60 s after its SIGTERM); the
    deadline, armed only by our handler, never started."""
    import subprocess
    import sys
    import time

    code = (
        "import asyncio, os, signal, threading\n"
        "from prefect.utilities.engine import capture_sigterm\n"
        "import doccheck.commands._signals as s\n"
        "s.STOP_DEADLINE_SECONDS = 1.0\n"
        "main = threading.main_thread().ident\n"
        "async def flow():\n"
        "    with capture_sigterm():\n"
        "        try:\n"
        "            threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGTERM)).start()\n"
        "            await asyncio.sleep(60)  # waiting for results: the loop sits in select\n"
        "        finally:\n"
        "            await asyncio.sleep(60)  # the crash report to a server that does not answer\n"
        "with s.stop_on_signals():\n"
        "    asyncio.run(flow())\n"
    )
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=40)
    assert out.returncode == 143, out
    assert time.monotonic() - started < 30
    assert out.stderr.strip().splitlines() == [
        "error: stopped (SIGTERM); rerun the same command to resume (nothing is charged twice)"
    ]
