"""The peak of a process tree's summed RSS, sampled (issue 49): what a holdout measures.

``wait4``'s ``ru_maxrss`` is the largest single process's peak; a command that starts children
(page workers, extraction workers, a matching process) holds their memory beside its own, so
the figure that counts is the sum over the whole tree at one moment. A thread reads the tree
every ``interval`` seconds: the descendants through ``/proc/*/stat``'s parent pid, each one's
``VmRSS`` from ``/proc/<pid>/status``. A child that lives less than an interval can be missed;
the figure is a lower bound of the true peak within one interval's growth.

Not a benchmark itself (``run_all.py`` skips modules starting with ``_``).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

__all__ = ["TreePeak", "describe"]


def _children() -> dict[int, list[int]]:
    """Every process's children, from ``/proc/*/stat`` (a process gone meanwhile is skipped)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces or parentheses itself.
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def _rss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return 0  # a zombie has no VmRSS line


def describe(pid: int) -> str:
    """A short name for a process of a doccheck run, from its command line."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return "?"
    line = " ".join(argv)
    for marker, name in (
        ("multiprocessing.spawn", "spawned worker (multiprocessing)"),
        ("multiprocessing.resource_tracker", "multiprocessing resource tracker"),
        ("doccheck.extract.worker", "extraction worker"),
        ("doccheck.cli run", "doccheck run"),
        (" run ", "doccheck run"),
    ):
        if marker in line:
            return name
    return line[:80]


@dataclass
class TreePeak:
    """Samples ``pid`` and its descendants every ``interval`` seconds between ``start()`` and
    ``stop()``: the peak of their summed RSS, who held what then, and each process's own peak."""

    pid: int
    interval: float = 0.05
    peak_kb: int = 0
    at_peak: list[tuple[int, str, int]] = field(default_factory=list)  # (pid, name, kB)
    own_peak_kb: dict[int, tuple[str, int]] = field(default_factory=dict)
    samples: int = 0
    peak_at: float = 0.0  # seconds after start()
    trace: list[tuple[float, int, int]] = field(default_factory=list)  # (seconds, tree kB, the root's kB)
    _started: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> TreePeak:
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="tree-peak", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        names: dict[int, str] = {}
        while not self._stop.is_set():
            self.sample(names)
            self._stop.wait(self.interval)

    def sample(self, names: dict[int, str]) -> None:
        """One reading of the tree."""
        children = _children()
        tree, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, ()))
        held = []
        for pid in tree:
            kb = _rss_kb(pid)
            if kb is None:
                continue
            name = names.get(pid) or names.setdefault(pid, describe(pid))
            held.append((pid, name, kb))
            if kb > self.own_peak_kb.get(pid, ("", 0))[1]:
                self.own_peak_kb[pid] = (name, kb)
        self.samples += 1
        total = sum(kb for _, _, kb in held)
        now = time.monotonic() - self._started
        self.trace.append((now, total, next((kb for pid, _, kb in held if pid == self.pid), 0)))
        if total > self.peak_kb:
            self.peak_kb, self.at_peak, self.peak_at = total, held, now

    @property
    def peak_mb(self) -> float:
        return self.peak_kb / 1024

    def breakdown(self) -> str:
        """Who held the peak (MB), then each child's own peak."""
        at = ", ".join(f"{name} {kb / 1024:.0f}" for _, name, kb in sorted(self.at_peak, key=lambda h: -h[2]))
        own = ", ".join(
            f"{name} {kb / 1024:.0f}" for pid, (name, kb) in sorted(self.own_peak_kb.items()) if pid != self.pid
        )
        when = f"at {self.peak_at:.1f} s of {self.trace[-1][0]:.1f} s" if self.trace else "never sampled"
        return f"peak {when}: {at}" + (f"; children's own peaks: {own}" if own else "; no child")
