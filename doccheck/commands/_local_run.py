"""``doccheck run`` and ``collect`` without Prefect: the same sequences with the library's own steps.

Why: with no Prefect server to watch the run (no ``PREFECT_API_URL``, no ``doccheck demo``
server running), running the flow made Prefect start a temporary API server for this one
command: about ten seconds of start-up, no UI to show for it, task runs lost under load and
noise at exit. The run itself is the same either way (``orchestrate.run_checks``: the same
ledger, reports and exit codes; the notebook runs it like this too), so Prefect runs only
when somebody can see it. ``--prefect`` / ``--no-prefect`` force either.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from doccheck.commands._runner import database_waits
from doccheck.commands._services import running_prefect_server
from doccheck.pipeline import (
    DEFAULT_CONCURRENCY,
    OverlappingLocalSteps,
    Prepared,
    RunObserver,
    RunOptions,
    RunSummary,
    run_checks,
)

#: What the summary's ``orchestration`` says for a run of this module.
LIBRARY = "this process (no Prefect server)"


def prefect_is_watching(local_home: Path) -> bool:
    """A Prefect server is configured (``PREFECT_API_URL``) or the demo's local one is running."""
    return bool(os.environ.get("PREFECT_API_URL")) or running_prefect_server(local_home) is not None


def use_prefect(choice: bool | None, local_home: Path) -> bool:
    """``--prefect``/``--no-prefect`` when given, else whether a server is there to watch."""
    return choice if choice is not None else prefect_is_watching(local_home)


class _Bars(RunObserver):
    """One rich bar per phase, fed by the run's observer hooks and the steps' callbacks."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.bars: dict[str, TaskID] = {}
        self.total: int | None = None  # documents to submit, known once the run is recorded

    def show(self, label: str, done: int, total: int | None) -> None:
        if self.progress is None:
            return
        if label not in self.bars:
            self.bars[label] = self.progress.add_task(label, total=total or None)
        self.progress.update(self.bars[label], completed=done, total=total or None)

    async def prepared(self, prepared: Prepared) -> None:
        """The total is known once the run is recorded; with overlapping phases, documents may
        already be submitted by then, so the bar keeps its count."""
        self.total = prepared.documents
        if self.progress is not None and "submitting" in self.bars:
            self.progress.update(self.bars["submitting"], total=prepared.documents or None)
        else:
            self.show("submitting", 0, prepared.documents)

    def waiting(self) -> None:
        self.show("waiting for results", 0, None)


@contextmanager
def _progress(console: Console, enabled: bool) -> Iterator[Progress | None]:
    if not enabled:
        yield None
        return
    columns = (TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress, database_waits(progress):
        yield progress


@asynccontextmanager
async def _service(base_url: str | None, database_url: str | None, concurrency: int) -> AsyncIterator[tuple[Any, Any]]:
    """The ledger and a checked client (one free request: a wrong address or key fails before
    anything is recorded), closed on the way out: :func:`doccheck.pipeline.open_service`."""
    from doccheck.config import load_settings
    from doccheck.pipeline import open_service

    settings = load_settings(base_url=base_url, database_url=database_url)
    async with open_service(settings, concurrency=concurrency) as (ledger, client):
        yield ledger, client


async def _run(options: RunOptions, bars: _Bars) -> RunSummary:
    connection = options.connection
    async with _service(connection.base_url, connection.database_url, options.submission.concurrency) as (
        ledger,
        client,
    ):
        steps = OverlappingLocalSteps(
            ledger, client, params=options.recorded("command"),
            on_submit=lambda done: bars.show("submitting", done, bars.total),
            on_results=lambda done, total: bars.show("waiting for results", done, total),
        )  # fmt: skip
        summary = await run_checks(options, steps, bars)
    summary.orchestration = LIBRARY
    return summary


def run_without_prefect(options: RunOptions, console: Console, *, show_progress: bool) -> RunSummary:
    """Run ``options`` in this process with the library's steps; errors propagate to the caller,
    who turns them into one line (``_runner.run_flow`` does the same for the flow)."""
    with _progress(console, show_progress) as progress:
        return asyncio.run(_run(options, _Bars(progress)))


def collect_without_prefect(
    *, campaign: str | None, run_id: str | None, out_dir: str, base_url: str | None, database_url: str | None,
    download: tuple[str, ...],
) -> RunSummary:  # fmt: skip
    """``doccheck collect`` in this process (``doccheck.pipeline.collecting._collect_run``)."""
    from doccheck.pipeline import collect_runs

    async def collect() -> RunSummary:
        async with _service(base_url, database_url, concurrency=DEFAULT_CONCURRENCY) as (ledger, client):
            summary = await collect_runs(ledger, client, campaign=campaign, run_id=run_id, out_dir=out_dir,
                                         download=download)  # fmt: skip
        summary.orchestration = LIBRARY
        return summary

    return asyncio.run(collect())
