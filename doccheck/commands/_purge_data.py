"""``doccheck purge``: delete a campaign's or a run's student data (dry run unless --yes).

``doccheck purge --campaign hist-101`` prints what would go (ledger rows per table,
report folders); add ``--yes`` to delete it. ``--retention`` purges every run older than
``DOCCHECK_RETENTION_DAYS`` (or ``--older-than``), drops raw webhook bodies already
applied, deletes events older than that, and clears plain-text secrets an older doccheck
kept in the ledger: run ``doccheck purge --retention --yes`` from cron or a Prefect
schedule. The logic is ``doccheck.ledger._data_purge``; see docs/data.md.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

_AGE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([dh]?)")


def parse_age(text: str) -> timedelta:
    """``30``/``30d`` days or ``12h`` hours; ValueError otherwise."""
    match = _AGE.fullmatch(text.strip().lower())
    if not match:
        raise ValueError(f"--older-than {text!r}: use days (30 or 30d) or hours (12h)")
    amount = float(match.group(1))
    return timedelta(hours=amount) if match.group(2) == "h" else timedelta(days=amount)


OlderThanOption = Annotated[
    str | None, typer.Option(help="Only runs started before this age: days (30, 30d) or hours (12h).")
]
RetentionOption = Annotated[
    bool,
    typer.Option(
        "--retention",
        help="Apply the retention policy: runs older than DOCCHECK_RETENTION_DAYS (or --older-than), "
        "applied event bodies, old events, legacy secrets. For schedules.",
    ),
]
RetentionDaysOption = Annotated[
    float | None,
    typer.Option(min=0, help="Days to keep student data (--retention; overrides DOCCHECK_RETENTION_DAYS)."),
]
DatabaseUrlOption = Annotated[str | None, typer.Option(help="Ledger database (overrides DOCCHECK_DATABASE_URL).")]


def purge(
    campaign: Annotated[list[str] | None, typer.Option("--campaign", help="Campaign to purge (repeatable).")] = None,
    run_id: Annotated[list[str] | None, typer.Option("--run-id", help="Run to purge (repeatable).")] = None,
    older_than: OlderThanOption = None,
    retention: RetentionOption = False,
    retention_days: RetentionDaysOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete (without it: a dry run that only prints).")] = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Delete a campaign's or run's ledger rows, webhook bodies and report folders (dry run unless --yes)."""
    from doccheck.config import load_settings
    from doccheck.errors import PurgeError
    from doccheck.ledger import (
        create_ledger_engine,
        drop_event_bodies,
        execute_purge,
        legacy_secret_rows,
        plan_purge,
        redact_url,
    )
    from doccheck.storage import display

    console = Console()
    err = Console(stderr=True)
    settings = load_settings(database_url=database_url, retention_days=retention_days)
    age = _age(err, older_than, settings.retention.days if retention else None, retention)
    window = timedelta(days=settings.webhook.event_window_days)  # event ids outlive a purge this long
    engine = create_ledger_engine(settings.ledger.database_url)
    verb = "removed" if yes else "would remove"
    try:
        try:
            plan = plan_purge(engine, campaigns=campaign or (), run_ids=run_id or (), older_than=age)
        except PurgeError as exc:
            if not retention:
                err.print(f"[red]error:[/] {exc}")
                raise typer.Exit(2) from None
            plan = None
        console.print(
            f"ledger {redact_url(settings.ledger.database_url)}" + ("" if yes else "  [bold](dry run: add --yes)[/]")
        )
        if plan is not None:
            done = execute_purge(engine, plan, event_window=window) if yes else None
            if done is not None:  # the catalogs of the --out folders concerned name no removed run
                from doccheck.outputs import rebuild_catalogs

                for catalog in rebuild_catalogs(folder.parent for folder in done.folders):
                    console.print(f"catalog rebuilt: {display(catalog)}", markup=False)
            rows = done.rows if done is not None else plan.rows
            folders = plan.folders
            console.print(
                f"runs: {len(plan.run_ids)}; campaigns whole: {', '.join(plan.whole_campaigns) or '-'}; "
                f"partly (other runs kept): {', '.join(plan.partial_campaigns) or '-'}"
            )
            table = Table("table", f"rows {verb}")
            for name, count in sorted(rows.items()):
                table.add_row(name, str(count))
            console.print(table)
            for folder in folders:  # a local folder, or a prefix of a bucket (its URL)
                console.print(f"report folder {verb}: {display(folder)}", markup=False)
            for folder in plan.export_folders:
                console.print(f"LMS export copy {verb}: {folder}")
            if plan.cached_files:  # the service's files of the purged checks, kept beside the run folders
                console.print(f"downloaded files {verb}: {len(plan.cached_files)}")
            for kept, why in plan.skipped_folders.items():
                console.print(f"[yellow]report folder kept[/] {kept}: {why}")
            for line in done.scrubbed if done is not None else ["database files: deleted rows scrubbed after deleting"]:
                console.print(line)
        if not retention:  # a campaign purge also reaches bodies of checks the ledger never knew
            bodies, _ = drop_event_bodies(engine, apply=yes, event_window=window)
            console.print(f"webhook event bodies (applied, or of unknown checks after 7 days) {verb}: {bodies}")
        if retention:
            bodies, old_events = drop_event_bodies(engine, older_than=age, apply=yes, event_window=window)
            secrets = legacy_secret_rows(engine, apply=yes)
            console.print(f"webhook event bodies (applied, or of unknown checks after 7 days) {verb}: {bodies}")
            console.print(f"webhook events older than {age} {verb}: {old_events}")
            console.print(f"legacy plain-text secrets in the ledger {verb}: {secrets}")
    finally:
        engine.dispose()


def _age(err: Console, older_than: str | None, retention_days: float | None, retention: bool) -> timedelta | None:
    """``--older-than``, else (``--retention``) the retention setting's days; one line and exit 2 when neither."""
    try:
        age = parse_age(older_than) if older_than else None
    except ValueError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    if retention and age is None:
        if retention_days is None:
            err.print("[red]error:[/] --retention needs DOCCHECK_RETENTION_DAYS (or --retention-days / --older-than)")
            raise typer.Exit(2)
        age = timedelta(days=retention_days)
    return age
