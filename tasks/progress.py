"""Process-wide progress of the running flow, for whoever is watching in this process.

Why: the flow's parameters must stay plain data (they are shown in the Prefect UI), so
a terminal progress bar cannot be handed in as a callback parameter. Instead the CLI
registers a listener here before it calls the flow; the tasks feed the library's
``on_progress`` callbacks into :func:`update`, which sums the batches of a phase (each
batch reports its own ``done``) and notifies every listener with a run-wide
:class:`~doccheck.pipeline.progress.Progress`. Without a listener this costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from threading import Lock

from doccheck.pipeline.progress import Progress, ProgressCallback

_lock = Lock()
_listeners: list[ProgressCallback] = []
_totals: dict[str, int] = {}
_parts: dict[str, dict[str, int]] = {}


@contextmanager
def listening(callback: ProgressCallback) -> Iterator[None]:
    """Deliver run-wide progress to ``callback`` while the ``with`` block runs."""
    with _lock:
        _listeners.append(callback)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(callback)


def reset(phase: str, total: int) -> None:
    """Start ``phase`` afresh with ``total`` items (the flow calls this before the batches)."""
    with _lock:
        _totals[phase] = total
        _parts[phase] = {}
    _notify(phase)


def update(phase: str, part: str, done: int) -> None:
    """Part ``part`` (e.g. one batch) of ``phase`` has ``done`` items finished."""
    with _lock:
        _parts.setdefault(phase, {})[part] = done
    _notify(phase)


def callback_for(phase: str, part: str) -> ProgressCallback:
    """An ``on_progress`` callback for the library that feeds :func:`update`."""

    def _callback(progress: Progress) -> None:
        update(phase, part, progress.done)

    return _callback


def _notify(phase: str) -> None:
    with _lock:
        listeners = list(_listeners)
        done = sum(_parts.get(phase, {}).values())
        total = _totals.get(phase, done)
    event = Progress(done=min(done, total) if total else done, total=total, phase=phase)
    for listener in listeners:
        try:
            listener(event)
        except Exception:  # noqa: BLE001 - a broken display never sinks a run
            pass


ProgressListener = Callable[[Progress], None]
