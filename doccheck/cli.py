"""The ``doccheck`` command line.

Each command lives in its own module and imports its heavy dependencies lazily, so that
``doccheck --help`` stays fast and the library never imports Prefect unless a command
that runs a flow is invoked.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from doccheck.commands import collect, config, demo, manifest, probe, purge, resolve, review, run
from doccheck.emulator import emulator
from doccheck.receiver import receiver

#: Commands that read no setting: they run with whatever the environment holds.
_NO_SETTINGS = {"emulator"}


class _SettingsFirst(TyperGroup):
    """Checks the settings before any command runs, and turns a bad value, whenever a
    command meets one (a flag), into its one line and exit 2: nothing sent or written."""

    def invoke(self, ctx: Any) -> Any:
        from doccheck.config import load_settings
        from doccheck.errors import SettingsError

        args = [*getattr(ctx, "protected_args", []), *ctx.args]
        try:
            if args and args[0] not in _NO_SETTINGS and "--help" not in args:
                load_settings()
            return super().invoke(ctx)
        except SettingsError as exc:
            for line in exc.lines:
                typer.echo(f"error: {line}", err=True)
            raise typer.Exit(2) from None


app = typer.Typer(
    cls=_SettingsFirst,
    name="doccheck",
    help="Bulk-check documents for AI-generated writing and similarity, with Parquet reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("emulator")(emulator)
app.command("receiver")(receiver)
app.command("run")(run)
app.command("collect")(collect)
app.command("demo")(demo)
app.command("purge")(purge)
app.command("resolve")(resolve)
app.command("review")(review)
app.command("probe")(probe)
app.command("manifest")(manifest)
app.command("config")(config)

if __name__ == "__main__":  # pragma: no cover
    app()
