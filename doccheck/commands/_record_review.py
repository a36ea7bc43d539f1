"""``doccheck review``: record what a reviewer decided about a flagged document.

Why: the report's flags are indicators, never verdicts (docs/instructor.md). Once someone
looked at the work and talked to the student, the decision belongs in the ledger, so every
later report shows it and a cleared flag is not raised again for the same version of the
document (:mod:`doccheck.ledger._dispositions`). Nothing here calls the service.
"""

from __future__ import annotations

import getpass
from typing import Annotated

import typer
from rich.console import Console


def review(
    document: Annotated[str, typer.Argument(help="The document id (as in the report).")],
    campaign: Annotated[str, typer.Option(help="The campaign the document was checked in.")],
    status: Annotated[str, typer.Option(help="The decision: cleared, discussed or referred.")],
    note: Annotated[str | None, typer.Option(help="What was looked at and decided (shown in the report).")] = None,
    by: Annotated[str | None, typer.Option(help="Who decided (default: the login name).")] = None,
    database_url: Annotated[
        str | None, typer.Option(help="Ledger database (default DOCCHECK_DATABASE_URL or sqlite:///doccheck.db).")
    ] = None,
) -> None:
    """Record a review decision (cleared, discussed, referred) for a document of a campaign; the next report shows it."""
    from doccheck.config import load_settings
    from doccheck.errors import DispositionError
    from doccheck.ledger import Ledger

    err = Console(stderr=True)
    ledger = Ledger(load_settings(database_url=database_url).ledger.database_url)
    try:
        decided = ledger.set_disposition(campaign, document, status, note=note, decided_by=by or _login())
    except DispositionError as exc:
        err.print(f"[red]error:[/] {exc}", markup=True, highlight=False)
        raise typer.Exit(2) from None
    finally:
        ledger.close()
    Console().print(
        f"{document!r} in {campaign!r}: {decided.status} by {decided.decided_by or '-'} at "
        f"{decided.decided_at.isoformat(timespec='seconds')}; the next report (doccheck run or collect) shows it.",
        markup=False,
        highlight=False,
    )


def _login() -> str | None:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in a container
        return None
