"""``doccheck probe``: learn the service's profile with calls that cost nothing.

Prints, for each assumption at a "not shown" point of the interface, whether the service
keeps it (holds), chose otherwise (differs) or cannot be asked without spending (untested),
and writes ``service-profile.json``; ``DOCCHECK_SERVICE_PROFILE`` points later runs at it
(docs/service-profile.md). The calls are listed in :mod:`doccheck.client.probe`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from doccheck.commands._runner import fail, require_service_settings


def probe(
    out: Annotated[Path, typer.Option("--out", help="Where to write the learnt profile.")] = Path(
        "service-profile.json"
    ),
    base_url: Annotated[
        str | None, typer.Option(help="Service base URL ending in /api/v1 (default DOCCHECK_BASE_URL).")
    ] = None,
) -> None:
    """Learn which of doccheck's assumptions the service keeps, with free calls only; write service-profile.json."""
    from doccheck.client.probe import DIFFERS, HOLDS
    from doccheck.client.probe import probe as run_probe
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
    out.write_text(result.profile.model_dump_json(indent=2) + "\n", encoding="utf-8")
    differs = sum(f.verdict == DIFFERS for f in result.findings)
    console.print(
        f"{differs} assumptions differ; profile written to {out}: set DOCCHECK_SERVICE_PROFILE={out} for runs "
        "(docs/service-profile.md). Nothing was charged: every call above is free."
    )
