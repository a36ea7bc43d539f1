"""Process-wide progress of the running flow, for whoever is watching in this process.

Why: the flow's parameters must stay plain data (they are shown in the Prefect UI), so
a terminal progress bar cannot be handed in as a callback parameter. Instead the CLI
registers a listener here before it calls the flow; the tasks feed the library's
``on_progress`` callbacks into :func:`update`, which sums the batches of a phase (each
batch reports its own ``done``) and notifies every listener with a run-wide
:class:`~doccheck.pipeline.Progress`. Without a listener this costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from threading import Lock

from doccheck.pipeline import Progress, ProgressCallback

_lock = Lock()
_listeners: list[ProgressCallback] = []
_totals: dict[str, int] = {}
_parts: dict[str, dict[str, int]] = {}
_part_totals: dict[str, dict[str, int]] = {}


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


def reset(phase: str, total: int | None = None) -> None:
    """Start ``phase`` afresh with ``total`` items (None: the parts report their own totals)."""
    with _lock:
        if total is None:
            _totals.pop(phase, None)
        else:
            _totals[phase] = total
        _parts[phase] = {}
        _part_totals[phase] = {}
    _notify(phase)


def set_total(phase: str, total: int) -> None:
    """``phase`` has ``total`` items, its parts' counts kept (a total known once the phase has
    started: the overlapped run's recording ends while documents are being sent)."""
    with _lock:
        _totals[phase] = total
    _notify(phase)


def update(phase: str, part: str, done: int, total: int | None = None) -> None:
    """Part ``part`` (e.g. one batch) of ``phase`` has ``done`` of its ``total`` items finished.

    The phase's total is the one given to :func:`reset`, or else the sum of its parts' totals.
    """
    with _lock:
        _parts.setdefault(phase, {})[part] = done
        if total is not None:
            _part_totals.setdefault(phase, {})[part] = total
    _notify(phase)


def callback_for(phase: str, part: str) -> ProgressCallback:
    """An ``on_progress`` callback for the library that feeds :func:`update`."""

    def _callback(progress: Progress) -> None:
        update(phase, part, progress.done, progress.total)

    return _callback


def _notify(phase: str) -> None:
    with _lock:
        listeners = list(_listeners)
        done = sum(_parts.get(phase, {}).values())
        total = _totals.get(phase, sum(_part_totals.get(phase, {}).values()) or done)
    event = Progress(done=min(done, total) if total else done, total=total, phase=phase)
    for listener in listeners:
        try:
            listener(event)
        except Exception:  # noqa: BLE001 - a broken display never sinks a run
            pass
