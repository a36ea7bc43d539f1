"""Run a flow in this process with a progress bar, and turn failures into one-line errors.

Shared by ``doccheck run``, ``doccheck collect`` and ``doccheck demo``. Why here and not
in each command: all three must keep Prefect's console quiet (the UI still receives
every log), draw the same progress bar and summary table, and exit the same way —
0 when the run finished (row-level failures are data in the reports), 1 with a single
line for configuration and fatal errors, never a traceback.

Prefect is imported lazily (inside functions) so that ``doccheck`` stays Prefect-free.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from doccheck.commands._services import running_prefect_server
from doccheck.ledger import describe_contradiction, describe_failure

PHASE_LABELS = {"submit": "submitting", "wait": "waiting for results", "poll": "polling"}

#: Where ``doccheck demo`` keeps its local Prefect server (relative to the current folder).
LOCAL_PREFECT_HOME = Path(".prefect")


def quiet_prefect(console_level: str = "CRITICAL") -> None:
    """Keep Prefect's console handler quiet; must run before Prefect is first imported.

    Only the *console* handler is raised: the loggers stay at INFO so that the Prefect
    UI still receives every flow and task log. The user's explicit settings win.
    """
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", console_level)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
    # Without PREFECT_API_URL Prefect starts a temporary server; on a busy machine it needs
    # more than the default 20 s.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def use_local_prefect_server_if_running() -> str | None:
    """Point Prefect at the demo's local server when no PREFECT_API_URL is set and it runs.

    So that a ``doccheck run`` after ``doccheck demo`` shows up in the same UI rather than
    in a throw-away ephemeral server.
    """
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    url = running_prefect_server(LOCAL_PREFECT_HOME)
    if url:
        os.environ["PREFECT_API_URL"] = url
    return url


def fail(console: Console, message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` on one line (stderr console) and return the Exit to raise."""
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def out_location(err: Console, out: str) -> Any:
    """``--out`` as the storage seam reads it (a folder, or a store's URL: a ``UserPath``); one
    line and exit 2 when it is refused (a URL carrying credentials, shown masked; an unknown
    scheme; a store whose extra is not installed), before anything runs."""
    from doccheck.errors import StorageError
    from doccheck.storage import resolve

    try:
        return resolve(out)
    except StorageError as exc:
        raise fail(err, f"--out: {exc}", code=2) from None


def require_service_settings(err: Console, base_url: str | None, database_url: str | None = None) -> None:
    """Fail with one line when the service address or the API key is missing, before anything runs
    (a flag's bad value is a ``SettingsError``: the CLI prints its line, exit 2)."""
    from doccheck.config import load_settings

    settings = load_settings(base_url=base_url, database_url=database_url)
    if not settings.service.base_url:
        raise fail(err, "no service address: set DOCCHECK_BASE_URL or pass --base-url")
    if settings.service.api_key is None or not settings.service.api_key.get_secret_value().strip():
        raise fail(err, "no API key: set DOCCHECK_API_KEY")


def ledger_label(database_url: str | None) -> str:
    """The ledger as an error line names it: SQLite's file path, else the URL without its password."""
    from sqlalchemy.engine import make_url

    from doccheck.config import load_settings
    from doccheck.ledger import redact_url

    url = database_url or load_settings().ledger.database_url
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        return str(Path(parsed.database).resolve())
    return redact_url(url)


def describe_error(exc: BaseException, ledger: str | None = None) -> str:
    """A one-line description of a fatal error, without secrets or traceback.

    Library errors are built without request data (the client never puts the key in a
    message), so their text is safe to show.
    """
    from doccheck.guards import describe_environment_error

    environment = describe_environment_error(exc, ledger)
    if environment is not None:
        return environment
    text = " ".join(str(exc).split()) or type(exc).__name__
    name = type(exc).__name__
    if name in {"ManifestError", "ConfigurationError"}:
        return text
    if name == "NetworkError":
        return f"the service did not answer ({text})"
    return f"{name}: {text}"


@contextmanager
def progress_bar(console: Console, enabled: bool = True) -> Iterator[None]:
    """Show one rich progress bar per phase while a flow runs (fed by ``prefect_doccheck.tasks.listening``)."""
    if not enabled:
        yield
        return
    from doccheck.pipeline import prefect_integration

    hub = prefect_integration().progress_hub()

    bars: dict[str, TaskID] = {}
    with Progress(
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:

        def listener(event: Any) -> None:
            label = PHASE_LABELS.get(event.phase, event.phase)
            if event.phase not in bars:
                bars[event.phase] = progress.add_task(label, total=event.total or None)
            progress.update(bars[event.phase], completed=event.done, total=event.total or None)

        with hub.listening(listener), database_waits(progress):
            yield


DATABASE_WAIT = "waiting for the database"


@contextmanager
def database_waits(progress: Progress) -> Iterator[None]:
    """A ``waiting for the database`` line in ``progress`` while a ledger call retries a lost
    connection (``doccheck.ledger._transient``), hidden again once the database answers:
    a database restart shows as a wait, not as silence."""
    from doccheck.ledger import on_wait

    shown: list[TaskID] = []

    def listener(reason: str | None) -> None:
        if reason is None:
            if shown:
                progress.update(shown[0], visible=False)
            return
        if not shown:
            shown.append(progress.add_task(DATABASE_WAIT, total=None))
        progress.update(shown[0], visible=True, description=DATABASE_WAIT)

    remove = on_wait(listener)
    try:
        yield
    finally:
        remove()


def run_flow(
    console: Console,
    err_console: Console,
    make_coro: Callable[[], Coroutine[Any, Any, Any]],
    *,
    show_progress: bool = True,
) -> Any:
    """Run ``make_coro()`` (an async flow call) to completion; fatal errors exit with one line.

    ``make_coro`` is a callable so that the flow module is imported only after the
    environment (quiet console, API URL) is set up by the caller.
    """
    with one_line_errors(err_console, cleanup=_drain), progress_bar(console, enabled=show_progress):
        return asyncio.run(make_coro())


@contextmanager
def one_line_errors(
    err_console: Console, cleanup: Callable[[], None] = lambda: None, ledger: str | None = None
) -> Iterator[None]:
    """Inside, a fatal error becomes one ``error:`` line and exit 1, and a stop by signal
    (Ctrl-C, SIGTERM as a scheduler sends it) one line with the resume hint and 130/143
    (``doccheck.commands._signals``); ``cleanup`` runs on the way out, bounded after a signal.
    ``ledger`` (:func:`ledger_label`) is named when the ledger's disk is full."""
    from doccheck.commands._signals import exit_after_stop, exit_code_for, stop_message, stop_on_signals

    stopped: int | None = None  # 130/143 when a signal stopped the command
    try:
        with stop_on_signals():
            yield
    except typer.Exit:
        raise
    except Exception as exc:  # noqa: BLE001 - every fatal error becomes one line
        raise fail(err_console, describe_error(exc, ledger)) from None
    except BaseException as exc:  # Ctrl-C, SIGTERM (Prefect's TerminationSignal): one line, 130/143
        stopped = exit_code_for(exc)
        if stopped is None:
            raise
        fail(err_console, stop_message(stopped), stopped)
        exit_after_stop(stopped, cleanup)  # bounded: worker threads may still wait on a request
    finally:
        if stopped is None:
            cleanup()


def _drain() -> None:
    try:
        from doccheck.pipeline import prefect_integration

        prefect_integration().drain()
    except Exception:  # noqa: BLE001 - shutdown best effort
        pass


def summary_table(summary: Any) -> Table:
    """The end-of-run table: what was planned, sent, charged and where the reports are."""
    s = summary.model_dump() if hasattr(summary, "model_dump") else dict(summary)
    table = Table(title=f"doccheck · {s.get('campaign', '')}", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    _plan_rows(table, s)
    if not s.get("dry_run"):
        _sent_rows(table, s)
        _money_rows(table, s)
        _output_rows(table, s)
    return table


def _plan_rows(table: Table, s: dict[str, Any]) -> None:
    """What was planned: the run, the rows accepted and rejected, words, estimate, local pairs."""
    modes = s.get("counts_by_mode") or {}
    table.add_row("status", str(s.get("status")))
    if s.get("orchestration"):
        table.add_row("run by", str(s["orchestration"]))
    if s.get("run_id"):
        table.add_row("run id", str(s["run_id"]))
    if s.get("runs_collected", 0) > 1:
        table.add_row("runs collected", str(s["runs_collected"]))
    table.add_row("documents accepted", str(s.get("documents", 0)))
    table.add_row("rows rejected", str(s.get("rejected", 0)))
    if modes:
        table.add_row("modes", ", ".join(f"{k} {v}" for k, v in modes.items() if k != "rejected"))
    if s.get("as_text"):
        table.add_row("files sent as their text", f"{s['as_text']} (the service does not take their type)")
    if s.get("misnamed"):
        table.add_row("files misnamed", f"{s['misnamed']} (read as what their bytes are: see read_as in the report)")
    for reason, count in (s.get("not_checked") or {}).items():
        table.add_row("not checked", f"{count}: {reason}")
    if s.get("total_words") or s.get("dry_run"):  # unknown (0) for a collect of an old run: not shown
        table.add_row("words", f"{s.get('total_words', 0):,}")
    if s.get("estimated_cost_cents") or s.get("dry_run"):
        table.add_row("estimated cost", _cents(s.get("estimated_cost_cents", 0)))
    if s.get("cohort_matches"):
        c = s["cohort_matches"]
        table.add_row(
            "cohort pairs (local)",
            f"{c.get('pairs', 0)}: identical {c.get('identical', 0)}, "
            f"near-duplicate {c.get('near_duplicate', 0)}, copied section {c.get('copied_section', 0)}",
        )


def _sent_rows(table: Table, s: dict[str, Any]) -> None:
    """What was sent, what was not and why, and each product's outcomes."""
    table.add_row("new checks", str(s.get("submitted", 0)))
    table.add_row("documents already submitted", str(s.get("reused", 0)))
    if s.get("submit_failed"):
        table.add_row("documents not submitted (errors)", str(s["submit_failed"]))
    if s.get("unsent_budget"):
        table.add_row("documents left unsent (budget)", str(s["unsent_budget"]))
    if s.get("unsent_retry_later") or s.get("in_flight_elsewhere"):
        table.add_row(
            "documents left unsent (retry later)",
            str(s.get("unsent_retry_later", 0) + s.get("in_flight_elsewhere", 0)),
        )
    if s.get("in_doubt"):
        table.add_row("documents in doubt (not sent again)", str(s["in_doubt"]))
    for product, counts in sorted((s.get("products") or {}).items()):
        table.add_row(product, ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for failure in s.get("product_failures") or []:  # the service's own words (doccheck.ledger._notices)
        table.add_row("  failed", escape(describe_failure(failure)))
    for contradiction in s.get("contradictions") or []:
        table.add_row("  [yellow]contradicted[/]", escape(describe_contradiction(contradiction)))
    table.add_row("products still pending", str(s.get("pending", 0)))
    table.add_row("checks", str(s.get("checks", 0)))


def _money_rows(table: Table, s: dict[str, Any]) -> None:
    """Charged, refunded, net, and what this run itself added."""
    table.add_row("charged", _cents(s.get("charged_cents", 0)))
    if s.get("refunded_cents"):
        table.add_row("refunded (failed products)", _cents(s["refunded_cents"]))
    table.add_row("net cost", _cents(s.get("net_cents", 0)))
    if 0 < s.get("spent_cents", 0) != s.get("charged_cents", 0):  # some checks were made by earlier runs
        table.add_row("new charges this run", _cents(s.get("spent_cents", 0)))


def _output_rows(table: Table, s: dict[str, Any]) -> None:
    """Where the reports, the page and the downloaded files are."""
    if s.get("report_dir"):
        table.add_row("reports", f"{s['report_dir']}  (copy in {s.get('latest_dir')})")
    if s.get("report_html"):
        table.add_row("report page", str(s["report_html"]))
    downloads = s.get("downloads")
    if downloads:
        table.add_row(
            "files",
            f"{downloads['downloaded']} downloaded, {downloads['reused']} already there, "
            f"{downloads['unavailable']} not offered, {downloads['failed']} failed",
        )
        for failure in downloads.get("failures", [])[:20]:
            table.add_row("  not downloaded", f"{failure['document_id']} {failure['kind']}: {failure['reason']}")


def rejections_table(summary: Any) -> Table | None:
    """The rejected rows with their reasons (None when there are none)."""
    rows = getattr(summary, "rejections", None) or []
    if not rows:
        return None
    table = Table(title="rejected rows (not sent, no charge)", title_justify="left", show_header=False)
    table.add_column("reason")
    for r in rows:
        table.add_row(str(r.get("reason")))
    return table


def _cents(value: int) -> str:
    return f"${value / 100:,.2f}"
