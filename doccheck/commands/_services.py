"""Start, probe and stop local helper processes (emulator, receiver, Prefect server).

Why a module of its own: ``doccheck demo`` and the test fixtures both need to run real
servers as subprocesses on free ports, wait until they answer, and stop them without
leaving orphans or printing anything. Doing that in one place keeps the demo's output
clean and the fixtures honest (they start exactly what a user would start).

Nothing here imports Prefect: the Prefect server is driven through its command line.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from doccheck.errors import ServiceError


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now on ``host`` (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on ``host:port`` and we may bind it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def is_healthy(url: str, timeout: float = 2.0) -> bool:
    """True when ``GET url`` answers 2xx; any network error means not (yet) healthy."""
    try:
        response = httpx.get(url, timeout=timeout)
    except httpx.HTTPError:
        return False
    return response.is_success


def wait_healthy(url: str, *, timeout: float, process: subprocess.Popen[bytes] | None = None) -> bool:
    """Poll ``url`` until it answers 2xx, the process dies, or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        if is_healthy(url):
            return True
        time.sleep(0.2)
    return False


@dataclass
class Service:
    """A running helper subprocess; ``stop()`` ends it and waits (idempotent)."""

    name: str
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path
    _log: IO[bytes] | None = field(default=None, repr=False)

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the service's log, to explain a failed start."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate gracefully (SIGTERM), kill after ``timeout``; closes the log file."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout)
        if self._log is not None and not self._log.closed:
            self._log.close()


def start_service(
    name: str,
    args: list[str],
    *,
    health_url: str,
    url: str,
    log_path: Path,
    env: dict[str, str] | None = None,
    timeout: float = 30.0,
    cwd: Path | None = None,
) -> Service:
    """Start ``args`` as a subprocess whose output goes to ``log_path``; wait for ``health_url``.

    Raises :class:`ServiceError` (naming the log) if it exits or does not answer in time;
    the process is stopped first so nothing is left behind.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "wb")  # noqa: SIM115 - closed by Service.stop
    process = subprocess.Popen(
        args,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    service = Service(name=name, process=process, url=url, log_path=log_path, _log=log)
    if not wait_healthy(health_url, timeout=timeout, process=process):
        service.stop()
        raise ServiceError(f"{name} did not start (see {log_path})")
    return service


def doccheck_command(*args: str) -> list[str]:
    """The argv that runs a ``doccheck`` sub-command with this interpreter."""
    return [sys.executable, "-m", "doccheck.cli", *args]


def prefect_command(*args: str) -> list[str]:
    """The argv that runs the ``prefect`` CLI installed beside this interpreter."""
    exe = Path(sys.executable).with_name("prefect")
    if exe.exists():
        return [str(exe), *args]
    return [sys.executable, "-m", "prefect", *args]


# --- a detached local Prefect server for the demo -------------------------------------

PREFECT_STATE_FILE = "doccheck-server.json"
#: Prefect's usual port, so the demo's UI address is the familiar one when it is free.
PREFERRED_PREFECT_PORT = 4200


def prefect_server_env(home: Path) -> dict[str, str]:
    """Environment for a local Prefect server that keeps everything under ``home``."""
    return {
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_API_URL": "",
    }


def _read_state(home: Path) -> dict[str, object] | None:
    try:
        state: dict[str, object] | None = json.loads((home / PREFECT_STATE_FILE).read_text())
        return state
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def running_prefect_server(home: Path) -> str | None:
    """The API URL of the local server recorded under ``home`` if it still answers, else None."""
    state = _read_state(home)
    if not state:
        return None
    pid, api_url = state.get("pid"), state.get("api_url")
    if not isinstance(pid, int) or not isinstance(api_url, str) or not _alive(pid):
        return None
    return api_url if is_healthy(api_url + "/health") else None


def ensure_prefect_server(home: Path, *, ui: bool = True, timeout: float = 90.0) -> str:
    """Return the API URL of a local Prefect server kept under ``home``, starting one if needed.

    Why detached: the Prefect UI is the point of the demo, so the server must outlive the
    command that started it; its pid and URL go to ``home/doccheck-server.json`` so that
    a later demo reuses it and ``stop_prefect_server`` can end it.
    """
    home = home.resolve()
    existing = running_prefect_server(home)
    if existing:
        return existing
    home.mkdir(parents=True, exist_ok=True)
    port = PREFERRED_PREFECT_PORT if port_is_free(PREFERRED_PREFECT_PORT) else free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    args = prefect_command("server", "start", "--host", "127.0.0.1", "--port", str(port))
    args.append("--ui" if ui else "--no-ui")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(prefect_server_env(home))
    env.pop("PREFECT_API_URL", None)
    with open(home / "server.log", "wb") as log:
        process = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    (home / PREFECT_STATE_FILE).write_text(json.dumps({"pid": process.pid, "api_url": api_url}))
    if not wait_healthy(api_url + "/health", timeout=timeout, process=process):
        stop_prefect_server(home)
        raise ServiceError(f"the local Prefect server did not start (see {home / 'server.log'})")
    return api_url


def stop_prefect_server(home: Path, timeout: float = 15.0) -> bool:
    """Stop the local server recorded under ``home``; True if one was running."""
    home = home.resolve()
    state = _read_state(home)
    (home / PREFECT_STATE_FILE).unlink(missing_ok=True)
    pid = state.get("pid") if state else None
    if not isinstance(pid, int) or not _alive(pid):
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
    except OSError:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid):
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.2)
    if _alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    return True
