"""``doccheck manifest EXPORT -o manifest.csv``: the manifest doccheck derives from an LMS export.

A course team can read what doccheck recognised (students, files, late flags, attempts),
edit it, and run that file instead of the export (docs/lms.md).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from doccheck.commands._runner import fail

__all__ = ["manifest"]


def manifest(
    export: Annotated[
        str,  # not a Path: a URL (s3://bucket/exports/C101-Essay.zip) would be mangled into one
        typer.Argument(help="An LMS export: the .zip or its unzipped folder, a path or a URL (docs/lms.md)."),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="The manifest CSV to write.")] = Path("manifest.csv"),
    lms: Annotated[str | None, typer.Option(help="Force the LMS: moodle, canvas, blackboard or plain.")] = None,
    attempts: Annotated[str, typer.Option(help="Blackboard exports: latest (default) or all attempts.")] = "latest",
) -> None:
    """Write the manifest derived from EXPORT (documents copied beside it) and print what was recognised."""
    from doccheck.sources.lms import export_campaign, review_manifest
    from doccheck.storage import display, is_url

    console, err = Console(), Console(stderr=True)
    if not is_url(export) and not Path(export).exists():  # a URL: its store says, at the first read
        raise fail(err, f"cannot read export {export!r}: no such file or folder")
    try:
        derived = review_manifest(export, output, lms=lms, attempts=attempts)
    except (ValueError, OSError) as exc:
        raise fail(err, f"cannot read export {display(export)!r}: {exc}") from None
    console.print(derived.result.summary())
    for line in derived.result.not_checked():
        console.print(line, markup=False, highlight=False)
    again = f"doccheck run {shlex.quote(str(output))} --campaign {shlex.quote(export_campaign(export))}"
    console.print(f"wrote {output}; run it with `{again}` to share the export's keys.", markup=False)
