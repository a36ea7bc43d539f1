"""Progress reporting shared by the pipeline functions.

A plain callback with a tiny dataclass keeps the library free of Prefect and of rich:
the Prefect task turns it into a progress artifact, the CLI into a progress bar.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` items of ``phase`` (``submit`` | ``wait`` | ``poll``)."""

    done: int
    total: int
    phase: str


ProgressCallback = Callable[[Progress], None]


def report(callback: ProgressCallback | None, done: int, total: int, phase: str) -> None:
    """Call ``callback`` if there is one; a failing progress display never sinks a run."""
    if callback is None:
        return
    try:
        callback(Progress(done=done, total=total, phase=phase))
    except Exception:  # noqa: BLE001 - progress is cosmetic
        import logging

        logging.getLogger(__name__).debug("progress callback failed", exc_info=True)
