"""A small pool of reused worker processes that extraction runs in, killed when a limit trips.

Why a process: a thread cannot be stopped, so an extraction that runs away in a thread
burns CPU and memory after its request is gone and holds up shutdown. A child process can
be limited by the kernel (RLIMIT_CPU, RLIMIT_AS, set by :mod:`doccheck.extract.worker`) and
killed by us at its wall-clock deadline. Workers are reused (a third of a millisecond per
small document, against ~0.45 s to start Python with lxml and PDFium) and replaced only
after the OS-level limits ended one. ``subprocess`` rather than ``multiprocessing``: the child never re-imports the
caller's ``__main__`` (a notebook, a Prefect flow file, the CLI), and only JSON crosses back.

:func:`shutdown` kills every worker at once (the emulator calls it on SIGTERM, and it runs
at interpreter exit): waiting callers get an :class:`ExtractionStopped` straight away.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time

from doccheck.errors import (
    ExtractionCrashed,
    ExtractionError,
    ExtractionLimitExceeded,
    ExtractionStopped,
    ImageOnlyPdf,
    ImageWithoutText,
    NotMachineReadable,
    PasswordProtected,
    UnsupportedFileType,
)
from doccheck.extract._protocol import LENGTH, READY
from doccheck.extract._read_limits import WORKERS, ExtractionLimits

log = logging.getLogger(__name__)

#: Reason code → class, for the worker's answers (only JSON crosses the process boundary).
NOT_READABLE_REASONS: dict[str, type[NotMachineReadable]] = {
    cls.reason: cls for cls in (NotMachineReadable, ImageWithoutText, ImageOnlyPdf, PasswordProtected)
}

#: Seconds a new worker may take to import its parsers before it is given up on.
START_SECONDS = 60.0


class _Vanished(Exception):
    """A reused worker had exited before this job reached it."""


class _Worker:
    """One child process and its pipes."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "doccheck.extract.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        self.ready = False
        self.stopped = False  # killed by shutdown(), not by a limit
        self.jobs = 0  # answered so far (a reused worker that vanished is retried once)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def _read(self, n: int, deadline: float) -> bytes | None:
        """``n`` bytes from the child, or None at EOF; :class:`TimeoutError` past ``deadline``."""
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if not ready:
                continue
            chunk = os.read(self.fd, min(n - len(buf), 1 << 20))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def start(self) -> None:
        """Wait for the worker's ready byte (its imports are not charged to the first document)."""
        if self.ready:
            return
        try:
            ready = self._read(len(READY), time.monotonic() + START_SECONDS) == READY
        except (TimeoutError, OSError, ValueError):
            ready = False
        if self.stopped:
            raise ExtractionStopped("extraction stopped: shutting down")
        if not ready:
            self.kill()
            raise ExtractionError(f"the extraction worker did not start ({self._death()})")
        self.ready = True

    def run(self, data: bytes, filename: str, limits: ExtractionLimits, engine: str = "") -> tuple[str, str]:
        job = {"filename": filename, "size": len(data), "limits": dataclasses.asdict(limits), "engine": engine}
        header = json.dumps(job, ensure_ascii=True).encode()
        deadline = time.monotonic() + limits.wall_seconds
        if self.jobs and not self.alive() and not self.stopped:
            raise _Vanished  # it died while idle: not this document's doing
        try:
            self.stdin.write(LENGTH.pack(len(header)) + header)
            self.stdin.write(data)
            self.stdin.flush()
            raw = self._read(LENGTH.size, deadline)
            size = LENGTH.unpack(raw)[0] if raw is not None else 0
            # JSON of at most max_text_chars characters: 6 bytes each at worst (\uXXXX), plus the envelope.
            body = self._read(size, deadline) if raw is not None and size <= 6 * limits.max_text_chars + 4096 else None
        except TimeoutError:
            self.kill()
            raise ExtractionLimitExceeded(f"extraction took over {limits.wall_seconds:g} s") from None
        except (BrokenPipeError, OSError, ValueError):
            body = None
        if body is None:
            self.kill()
            raise self._died(limits)
        self.jobs += 1
        try:
            answer = json.loads(body)
            assert isinstance(answer, dict)
        except (ValueError, AssertionError):
            self.kill()
            raise ExtractionError("extraction failed (the worker's answer was malformed)") from None
        if answer.get("retire"):  # it ran out of memory and exits; the next job needs a new one
            self.kill()
        if answer.get("ok"):
            return str(answer["text"]), str(answer.get("read_as") or "")
        kind: type[ExtractionError] | None = {"unsupported": UnsupportedFileType, "limit": ExtractionLimitExceeded}.get(
            str(answer.get("kind"))
        )
        if answer.get("kind") == "reason":
            kind = NOT_READABLE_REASONS.get(str(answer.get("reason")))
        raise (kind or ExtractionError)(str(answer.get("message")))

    def _died(self, limits: ExtractionLimits) -> ExtractionError:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if self.stopped:
            return ExtractionStopped("extraction stopped: shutting down")
        if code is not None and -code == signal.SIGXCPU:
            return ExtractionLimitExceeded(f"extraction used over {limits.cpu_seconds} s of CPU")
        if code is not None and -code == signal.SIGABRT:  # native code (PDFium) failing an allocation under RLIMIT_AS
            return ExtractionLimitExceeded(f"extraction was stopped (over {limits.memory_bytes >> 20} MiB of memory?)")
        if code is not None and -code == signal.SIGKILL:  # the kernel's OOM killer, most likely
            return ExtractionLimitExceeded(f"extraction was killed (over {limits.memory_bytes >> 20} MiB of memory?)")
        if code is not None and code < 0:
            return ExtractionCrashed(f"extraction failed ({self._death()})")
        return ExtractionError(f"extraction failed ({self._death()})")

    def _death(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "no answer"
        return f"worker exited with signal {-code}" if code < 0 else f"worker exited with status {code}"


class _Pool:
    """At most ``size`` workers; idle ones are reused, failed ones replaced lazily."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._reset()

    def _reset(self) -> None:
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(self.size)
        self.idle: list[_Worker] = []
        self.all: set[_Worker] = set()
        self.pid = os.getpid()

    def run(self, data: bytes, filename: str, limits: ExtractionLimits) -> tuple[str, str]:
        if self.pid != os.getpid():  # a forked copy must not share the parent's pipes
            self._reset()
        self.slots.acquire()
        try:
            try:
                return self._run(data, filename, limits)
            except ExtractionCrashed as exc:
                if b"%PDF" not in data[:1024]:
                    raise
                # PDFium crashed on this file (not a limit): pypdf reads it, under its own bounds
                log.warning("PDFium crashed reading %s (%s): read with pypdf instead", filename[:80], exc)
                return self._run(data, filename, limits, engine="pypdf")
        finally:
            self.slots.release()

    def _run(self, data: bytes, filename: str, limits: ExtractionLimits, engine: str = "") -> tuple[str, str]:
        """One job in a worker (a reused worker found dead is replaced once)."""
        for attempt in (1, 2):
            worker = self._take()
            try:
                worker.start()
                text = worker.run(data, filename, limits, engine)
            except _Vanished:
                self._discard(worker, kill=True)
                if attempt == 2:
                    raise ExtractionError("extraction failed (worker exited)") from None
                continue
            except ExtractionError:
                self._give_back(worker)  # kept only if alive: limits that tripped the OS killed it
                raise
            except BaseException:
                self._discard(worker, kill=True)
                raise
            self._give_back(worker)
            return text
        raise AssertionError("unreachable")

    def _take(self) -> _Worker:
        with self.lock:
            while self.idle:
                worker = self.idle.pop()
                if worker.alive():
                    return worker
                self.all.discard(worker)
            worker = _Worker()
            self.all.add(worker)
            return worker

    def _give_back(self, worker: _Worker) -> None:
        if worker.alive() and not worker.stopped:
            with self.lock:
                self.idle.append(worker)
        else:
            self._discard(worker, kill=True)

    def _discard(self, worker: _Worker, *, kill: bool) -> None:
        with self.lock:
            self.all.discard(worker)
        if kill:
            worker.kill()

    def shutdown(self) -> None:
        with self.lock:
            workers = list(self.all)
            self.all.clear()
            self.idle.clear()
        for worker in workers:
            worker.stopped = True
            worker.kill()


_pool = _Pool(WORKERS)


def run_sandboxed(data: bytes, filename: str, limits: ExtractionLimits) -> tuple[str, str]:
    """Extract in a worker process under ``limits``: the text and the type read; every failure is an
    :class:`ExtractionError`."""
    return _pool.run(data, filename, limits)


def shutdown() -> None:
    """Kill every worker now; in-flight extractions fail at once (later ones start new workers)."""
    _pool.shutdown()


def worker_pids() -> list[int]:
    """Process ids of the live workers (tests check that a tripped limit replaced its worker)."""
    with _pool.lock:
        return sorted(w.proc.pid for w in _pool.all if w.alive())


atexit.register(shutdown)
