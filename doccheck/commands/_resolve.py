"""``doccheck resolve``: settle the documents a run left ``in_doubt``, after a human looked.

Why: a document is ``in_doubt`` when an earlier request may have created (and billed) a
check that no lookup could find or rule out (a service without a list, a list without
metadata or served oldest first...). doccheck never resends on absence of evidence, so
only the user, looking at the account, can say which it was:

- ``doccheck resolve --campaign C`` lists them: document, first send time and the
  ``doccheck_ref`` metadata to search the account for;
- ``--confirm-not-created`` (the account has no such check) or ``--resend`` (the user
  accepts a possible second charge) clears the doubt: the next ``doccheck run`` sends them.
  ``--document ID`` (repeatable) limits either to some documents.

Nothing here calls the service; it changes only the ledger, and only with one of the flags.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table


def resolve(
    campaign: Annotated[str, typer.Option(help="The campaign whose documents in doubt to list or settle.")],
    confirm_not_created: Annotated[
        bool,
        typer.Option(
            "--confirm-not-created",
            help="You looked at the account: no check exists for them. The next run sends them.",
        ),
    ] = False,
    resend: Annotated[
        bool,
        typer.Option("--resend", help="Send them again on the next run, accepting a possible second charge."),
    ] = False,
    document: Annotated[
        list[str] | None, typer.Option("--document", help="Only this document id (repeatable).")
    ] = None,
    database_url: Annotated[
        str | None, typer.Option(help="Ledger database (default DOCCHECK_DATABASE_URL or sqlite:///doccheck.db).")
    ] = None,
) -> None:
    """List a campaign's documents in doubt (an earlier request may have made a billed check), or settle them."""
    from doccheck.config import load_settings
    from doccheck.ledger import Ledger, in_doubt
    from doccheck.pipeline import reference_for

    console = Console()
    if confirm_not_created and resend:
        Console(stderr=True).print("[red]error:[/] give at most one of --confirm-not-created and --resend")
        raise typer.Exit(2)
    ledger = Ledger(load_settings(database_url=database_url).ledger.database_url)
    try:
        with ledger.session() as s:
            rows = in_doubt(s, campaign, document or None)
        if not rows:
            console.print(f"campaign {campaign!r}: no document in doubt.")
            return
        table = Table("document", "mode", "first sent (UTC)", "search the account for metadata doccheck_ref")
        for row in rows:
            doubt = ledger.doubt(row.idempotency_key)
            sent = doubt.first_sent_at.isoformat(timespec="seconds") if doubt and doubt.first_sent_at else "-"
            table.add_row(row.document_id or "-", row.mode or "-", sent, reference_for(row.idempotency_key))
        console.print(table)
        if not (confirm_not_created or resend):
            console.print(
                f"{len(rows)} documents in doubt: each may already have a billed check. Look for their "
                "doccheck_ref in the service's account, then run this again with --confirm-not-created "
                "(no check exists) or --resend (send again, accepting a possible second charge)."
            )
            return
        code, why = (
            ("confirmed_not_created", "the user confirmed that no check was created; sent by the next run")
            if confirm_not_created
            else ("resend_accepted", "the user accepted a possible second charge; sent by the next run")
        )
        for row in rows:
            ledger.settle(row.idempotency_key)
            ledger.mark_submit_failed(row.idempotency_key, code=code, message=why, state="failed")
        console.print(f"{len(rows)} documents settled: run `doccheck run` of campaign {campaign!r} again to send them.")
    finally:
        ledger.close()
