"""The ``doccheck`` command line.

Each command lives in its own module and imports its heavy dependencies lazily, so that
``doccheck --help`` stays fast and the library never imports Prefect unless a command
that runs a flow is invoked.
"""

from __future__ import annotations

import typer

from doccheck.commands.collect import collect
from doccheck.commands.demo import demo
from doccheck.commands.manifest import manifest
from doccheck.commands.probe import probe
from doccheck.commands.purge import purge
from doccheck.commands.resolve import resolve
from doccheck.commands.review import review
from doccheck.commands.run import run
from doccheck.emulator.command import emulator
from doccheck.receiver.command import receiver

app = typer.Typer(
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

if __name__ == "__main__":  # pragma: no cover
    app()
