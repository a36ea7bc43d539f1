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
