"""``doccheck probe``: learn the service's profile with calls that cost nothing.

Prints, for each assumption at a "not shown" point of the interface, whether the service
keeps it (holds), chose otherwise (differs) or cannot be asked without spending (untested),
and writes ``service-profile.json``; ``DOCCHECK_SERVICE_PROFILE`` points later runs at it
(docs/service-profile.md). The calls are listed in :func:`doccheck.client._probe`.

It also says which file types are taken as files and where that comes from: the interface
publishes no list the service could be asked for, so it is the profile's ``accepted_types``
(or the emulator's list by default), less the types a create was refused for and the ledger
keeps (``learned: service refuses .odt (since ...)``, :mod:`doccheck.ledger._refused_types`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from doccheck.commands._runner import fail, require_service_settings

if TYPE_CHECKING:
    from doccheck.client import ServiceProfile


def probe(
    out: Annotated[Path, typer.Option("--out", help="Where to write the learnt profile.")] = Path(
        "service-profile.json"
    ),
    base_url: Annotated[
        str | None, typer.Option(help="Service base URL ending in /api/v1 (default DOCCHECK_BASE_URL).")
    ] = None,
) -> None:
    """Learn which of doccheck's assumptions the service keeps, with free calls only; write service-profile.json."""
    from doccheck.client import DIFFERS, HOLDS
    from doccheck.client import probe as run_probe
    from doccheck.config import load_settings

    console = Console()
    err = Console(stderr=True)
    require_service_settings(err, base_url)
    settings = load_settings(base_url=base_url)
    try:
        result = run_probe(settings.service.base_url, settings.service.api_key)
    except Exception as exc:  # noqa: BLE001 - one line, no traceback, no secret
        from doccheck.commands._runner import describe_error

        raise fail(err, f"probe failed: {describe_error(exc)}") from None
    table = Table("assumption", "ours", "the service", "verdict")
    colour = {HOLDS: "green", DIFFERS: "yellow"}
    for f in result.findings:
        style = colour.get(f.verdict, "dim")
        table.add_row(f.name, f.expected, f.observed, f"[{style}]{f.verdict}[/]")
    console.print(table)
    for line in file_type_lines(settings.service.base_url or "", settings.ledger.database_url):
        console.print(line, highlight=False, soft_wrap=True)
    out.write_text(_keeping_types(result.profile).model_dump_json(indent=2) + "\n", encoding="utf-8")
    differs = sum(f.verdict == DIFFERS for f in result.findings)
    console.print(
        f"{differs} assumptions differ; profile written to {out}: set DOCCHECK_SERVICE_PROFILE={out} for runs "
        "(docs/service-profile.md). Nothing was charged: every call above is free."
    )


def file_type_lines(base_url: str, database_url: str | None) -> list[str]:
    """The types sent as files and where the list comes from, then what the ledger learnt."""
    from doccheck.client import current_profile
    from doccheck.config import setting

    profile = current_profile()
    path = setting("service", "profile")
    source = (
        f"the service profile's accepted_types ({path})"
        if path and "accepted_types" in profile.model_fields_set
        else "the default (the emulator's list; set accepted_types in the service profile)"
    )
    lines = [
        f"file types sent as files: {' '.join(sorted(profile.accepted_types))}; from {source}. The interface "
        "publishes no list of accepted types, so the service cannot be asked; a file of another type that "
        "doccheck reads is sent as its text."
    ]
    learnt = learnt_refusals(base_url, database_url)
    if learnt is None:
        lines.append("learned: no ledger to read (DOCCHECK_DATABASE_URL names no existing ledger)")
    elif not learnt:
        lines.append("learned: no refused type kept for this service in the ledger")
    for ext, since in learnt.items() if learnt else ():
        lines.append(
            f"learned: service refuses {ext} (since {since:%Y-%m-%d %H:%M} UTC): its files are sent as their text; "
            "kept in the ledger from a refused create"
        )
    return lines


def learnt_refusals(base_url: str, database_url: str | None) -> dict[str, datetime] | None:
    """The refusals the ledger keeps for ``base_url`` (None: no ledger; a missing SQLite file is not created)."""
    from doccheck.ledger import refused_types
    from doccheck.matching import existing_ledger

    ledger = existing_ledger(database_url)
    if ledger is None:
        return None
    try:
        with ledger.engine.connect() as conn:
            return refused_types(conn, base_url)
    finally:
        ledger.close()


def _keeping_types(learnt: ServiceProfile) -> ServiceProfile:
    """The learnt profile, keeping the ``accepted_types`` a user set in the profile in force
    (nothing free can learn them: a probe must not widen them back to the default)."""
    from doccheck.client import current_profile

    current = current_profile()
    if "accepted_types" not in current.model_fields_set:
        return learnt
    return learnt.model_copy(update={"accepted_types": current.accepted_types})
