"""`doccheck demo` (placeholder until implemented)."""

from __future__ import annotations

import typer


def demo() -> None:
    """Not implemented yet."""
    typer.echo("not implemented yet", err=True)
    raise typer.Exit(2)
