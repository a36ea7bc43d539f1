"""Progress of a notebook run: a live line in Jupyter, a rich bar in a terminal, or nothing.

Why: a data team runs ``check_dataframe`` on thousands of rows from a notebook cell. With
no sign of life they cannot tell a slow service from a hung kernel, nor see what the run is
costing. In Jupyter a display that updates in place (``display(..., display_id=True)``)
shows documents submitted, results arrived, what is pending and the cost so far; it also
survives into an executed notebook's saved output. In a terminal the same counts go to a
rich progress bar on stderr; ``progress=False`` keeps everything quiet.

The display is created in the caller's thread (where Jupyter knows which cell is running)
and updated from the worker thread that runs the event loop; updates are throttled.
"""

from __future__ import annotations

import html
import sys
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Protocol

__all__ = ["ProgressState", "RunProgress", "in_jupyter", "progress_display"]

_MIN_INTERVAL = 0.2  # seconds between two redraws (the last state is always drawn)


@dataclass(frozen=True)
class ProgressState:
    """What a user wants to see while a run works: counts and money, nothing else."""

    documents: int = 0
    submitted: int = 0  # documents handled by the submit phase (new, reused, failed or skipped)
    products: int = 0  # products expected to finish
    finished: int = 0  # products with a final result (completed or failed)
    cost_cents: int = 0
    phase: str = "submit"  # submit | wait | done

    @property
    def pending(self) -> int:
        return max(0, self.products - self.finished)

    def text(self) -> str:
        """One plain line (terminal logs, the notebook's text/plain output)."""
        return (
            f"submitted {self.submitted}/{self.documents} · results {self.finished}/{self.products}"
            f" · pending {self.pending} · cost so far ${self.cost_cents / 100:,.2f}"
        )

    def _repr_html_(self) -> str:
        total = self.documents if self.phase == "submit" else self.products
        done = self.submitted if self.phase == "submit" else self.finished
        label = {"submit": "submitting", "wait": "waiting for results", "done": "done"}.get(self.phase, self.phase)
        return (
            "<div style='font-family: sans-serif; font-size: 13px'>"
            f"<b>doccheck</b> {html.escape(label)} "
            f"<progress value='{done}' max='{max(total, 1)}' style='width: 12em; vertical-align: middle'></progress> "
            f"{html.escape(self.text())}</div>"
        )

    def __repr__(self) -> str:
        return self.text()


class RunProgress(Protocol):
    """What the notebook orchestration calls; implementations never raise."""

    def update(self, **changes: Any) -> None:
        """Show the run's latest figures (only the keys that changed are passed)."""

    def close(self) -> None:
        """Leave the final figures on screen and release the display."""


class _Quiet:
    def update(self, **changes: Any) -> None:
        pass

    def close(self) -> None:
        pass


class _Throttled:
    """Keeps the state, redraws at most every ``_MIN_INTERVAL`` s, always on close."""

    def __init__(self) -> None:
        self.state = ProgressState()
        self._lock = threading.Lock()
        self._drawn_at = 0.0

    def update(self, **changes: Any) -> None:
        with self._lock:
            self.state = replace(self.state, **changes)
            now = time.monotonic()
            if now - self._drawn_at < _MIN_INTERVAL:
                return
            self._drawn_at = now
            state = self.state
        self._safe_draw(state)

    def close(self) -> None:
        with self._lock:
            state = self.state
        self._safe_draw(state, final=True)

    def _safe_draw(self, state: ProgressState, final: bool = False) -> None:
        try:
            self._draw(state, final)
        except Exception:  # noqa: BLE001 - progress is cosmetic, never sinks a run
            pass

    def _draw(self, state: ProgressState, final: bool) -> None:
        raise NotImplementedError


class _Jupyter(_Throttled):
    def __init__(self) -> None:
        super().__init__()
        from IPython.display import display

        self._handle = display(self.state, display_id=True)  # type: ignore[no-untyped-call]  # IPython is untyped

    def _draw(self, state: ProgressState, final: bool) -> None:
        if self._handle is not None:
            self._handle.update(state)


class _Terminal(_Throttled):
    def __init__(self) -> None:
        super().__init__()
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        self._progress = Progress(
            TextColumn("[bold]doccheck[/bold] {task.description}"),
            BarColumn(),
            TextColumn("{task.fields[counts]}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._progress.add_task("submitting", total=None, counts="")
        self._progress.start()

    def _draw(self, state: ProgressState, final: bool) -> None:
        total = state.documents if state.phase == "submit" else state.products
        done = state.submitted if state.phase == "submit" else state.finished
        label = {"submit": "submitting", "wait": "waiting for results", "done": "done"}.get(state.phase, state.phase)
        self._progress.update(self._task, description=label, total=max(total, 1), completed=done, counts=state.text())
        if final:
            self._progress.stop()


def in_jupyter() -> bool:
    """True inside a Jupyter kernel (not a plain IPython terminal, not a script)."""
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except Exception:  # noqa: BLE001
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def progress_display(enabled: bool | None) -> RunProgress:
    """The display for this place: ``None`` = Jupyter's live line in a kernel, a rich bar
    when stderr is a terminal, else nothing; ``False`` = nothing; ``True`` = Jupyter's or
    the terminal's, whichever applies."""
    if enabled is False:
        return _Quiet()
    try:
        if in_jupyter():
            return _Jupyter()
        if enabled or sys.stderr.isatty():
            return _Terminal()
    except Exception:  # noqa: BLE001 - no display rather than no run
        pass
    return _Quiet()
