"""The ``doccheck emulator`` process itself: clean stop on SIGINT, clear error on a busy port."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

from tests.fixtures.emulator import start_emulator

pytestmark = pytest.mark.integration


def test_sigint_stops_cleanly() -> None:
    handle = start_emulator()
    handle._http.close()
    handle.process.send_signal(signal.SIGINT)
    assert handle.process.wait(timeout=15) == 0
    log = handle.log()
    assert "Traceback" not in log and handle.base_url in log


def test_busy_port_is_one_clear_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "doccheck.cli", "emulator", "--port", str(port)],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 2
    assert "cannot listen" in out.stderr and "Traceback" not in out.stderr + out.stdout
