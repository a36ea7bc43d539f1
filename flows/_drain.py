"""Prefect process plumbing shared by the flows' callers (CLI commands, fixtures).

Why: Prefect ships logs and events to its API from background workers that flush at
interpreter exit. If the API goes away first (a test session stopping its server, the
demo finishing) the flush prints ``Error logging to API`` noise. Draining them
explicitly, while the server is still up, keeps every output clean.
"""

from __future__ import annotations


def drain_prefect(timeout: float = 10.0) -> None:
    """Send every queued Prefect log and event now, waiting at most ``timeout`` seconds each."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        try:
            worker.drain_all(timeout=timeout, at_exit=False)
        except Exception:  # noqa: BLE001 - best effort at shutdown; nothing left to report to
            pass
