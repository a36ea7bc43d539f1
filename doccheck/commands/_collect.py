"""``doccheck collect``: poll what is still pending and rewrite a run's reports.

Runs the ``collect_results`` flow in this process when a Prefect server is there to watch it
(lazy Prefect import, as ``run``), else the same steps with the library's calls
(``doccheck.pipeline.collecting._collect_run``); ``--prefect`` / ``--no-prefect`` force either.
Useful after ``--no-wait``, a wait timeout, or a receiver outage; safe to repeat.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from doccheck.commands._local_run import collect_without_prefect, use_prefect
from doccheck.commands._pyarrow_without_pandas import keep_pandas_unloaded
from doccheck.commands._runner import (
    LOCAL_PREFECT_HOME,
    fail,
    ledger_label,
    one_line_errors,
    out_location,
    quiet_prefect,
    require_service_settings,
    run_flow,
    summary_table,
    use_local_prefect_server_if_running,
)
from doccheck.outputs import parse_kinds


def collect(
    campaign: Annotated[
        str | None, typer.Option(help="Collect every run of this campaign with pending products.")
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="Collect this run (see `doccheck run`'s summary).")
    ] = None,
    out: Annotated[
        str, typer.Option("--out", help="Where the reports go: a folder, or a URL such as s3://bucket/reports.")
    ] = "reports",
    database_url: Annotated[
        str | None, typer.Option(help="Ledger database (default DOCCHECK_DATABASE_URL or sqlite:///doccheck.db).")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Service base URL ending in /api/v1 (default DOCCHECK_BASE_URL).")
    ] = None,
    download: Annotated[
        str,
        typer.Option(
            help="Also fetch these files of finished checks into <run>/files/: similarity_pdf, pdf, original (comma-separated)."
        ),
    ] = "",
    prefect: Annotated[
        bool | None,
        typer.Option(
            "--prefect/--no-prefect",
            help="Run as a Prefect flow or in this process. Default: a flow when a Prefect server is there.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Poll every pending product of a run or of a whole campaign and rewrite the reports (a collect_results flow run when a Prefect server is there, else in this process)."""
    console = Console()
    err = Console(stderr=True)
    try:
        parse_kinds(download)
    except ValueError as exc:
        raise fail(err, str(exc)) from None
    if bool(campaign) == bool(run_id):
        raise fail(err, "give exactly one of --campaign or --run-id")
    out_location(err, out)
    require_service_settings(err, base_url, database_url)
    keep_pandas_unloaded()  # ~32 MB of the collect's peak (doccheck.commands._pyarrow_without_pandas)
    if not use_prefect(prefect, LOCAL_PREFECT_HOME):
        with one_line_errors(err, ledger=ledger_label(database_url)):
            summary = collect_without_prefect(campaign=campaign, run_id=run_id, out_dir=out, base_url=base_url,
                                              database_url=database_url, download=tuple(parse_kinds(download)))  # fmt: skip
        _print_collected(console, summary)
        return

    quiet_prefect()
    use_local_prefect_server_if_running()

    def start():  # type: ignore[no-untyped-def]
        from doccheck.pipeline import prefect_integration

        return prefect_integration().collect_results(
            campaign=campaign,
            run_id=run_id,
            out_dir=out,
            base_url=base_url,
            database_url=database_url,
            download=download,
        )

    _print_collected(console, run_flow(console, err, start, show_progress=False))


def _print_collected(console: Console, summary: Any) -> None:
    console.print(summary_table(summary))
    for line in summary.poll_errors:
        console.print(f"warning: {line}", markup=False, soft_wrap=True)
    if summary.status == "pending":
        console.print(f"{summary.pending} products still pending: run this command again later.")
