"""``doccheck config``: the settings in effect, where each came from, the settings file read,
and the retry worst case.

Why a command: what an operator set is what runs, and this is where they see it. Every
field of :class:`doccheck.config.Settings` is listed with its variable, its value (a secret
masked) and its source (default, file, environment, Prefect block, flag), then the file
``DOCCHECK_ENV_FILE`` names (or that it is unset); ``--json`` for scripts. The retry worst
case says how long one document can be retried before it is given up, from the settings in
effect (:mod:`doccheck.pipeline.sending._retry_budget`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer


def config(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document (for scripts).")] = False,
    database_url: Annotated[str | None, typer.Option(help="As `run --database-url` would override it.")] = None,
    base_url: Annotated[str | None, typer.Option(help="As `run --base-url` would override it.")] = None,
    submit_deadline: Annotated[
        float | None, typer.Option(min=0, help="As `run --submit-deadline` (the retry worst case uses it).")
    ] = None,
    read_blocks: Annotated[
        bool,
        typer.Option(
            "--read-blocks",
            help="Also read the Prefect blocks named by DOCCHECK_CREDENTIALS_BLOCK / DOCCHECK_API_KEY_BLOCK "
            "and DOCCHECK_STORAGE_BLOCK (via PREFECT_API_URL), as a deployment's run would.",
        ),
    ] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the reference page of every setting (docs/configuration.md).")
    ] = False,
) -> None:
    """Show the effective configuration: each DOCCHECK_* setting, its value and its source."""
    if markdown:
        typer.echo(configuration_markdown(), nl=False)
        return
    from rich.console import Console
    from rich.table import Table

    from doccheck.config import SECRET_MASK, env_file, load_settings, sources_of, unknown_variables, values_of
    from doccheck.pipeline import retry_budget

    block = _block_values() if read_blocks else {}
    settings = load_settings(block=block, database_url=database_url, base_url=base_url)
    sources = sources_of(block=block, database_url=database_url, base_url=base_url)
    rows = [
        {"variable": f.env, "setting": f"{f.group}.{f.name}", "value": _shown(value, f.secret, SECRET_MASK),
         "source": sources[f.env]}
        for f, value in values_of(settings)
    ]  # fmt: skip
    budget = retry_budget(settings, submit_deadline=submit_deadline)
    if as_json:
        file = env_file()
        document = {"settings": rows, "env_file": None if file is None else str(file),
                    "unknown_variables": unknown_variables(), "retry_worst_case": budget.as_dict()}  # fmt: skip
        typer.echo(json.dumps(document, indent=2))
        return
    table = Table(title="doccheck settings in effect")
    for column in ("variable", "value", "source"):
        table.add_column(column, overflow="fold")
    for row in rows:
        value = row["value"]
        shown = ",".join(value) if isinstance(value, list) else "" if value is None else str(value)
        table.add_row(row["variable"], shown, row["source"])
    console = Console()
    console.print(table)
    console.print(_env_file_line(env_file()), highlight=False, soft_wrap=True)
    for name in unknown_variables():
        console.print(f"warning: {name} is set but no setting reads it (a typo?)", highlight=False)
    console.print(budget.sentence(), highlight=False, soft_wrap=True)


def _env_file_line(file: Path | None) -> str:
    """Which file the values marked ``file`` came from (it exists: a missing one stops every
    command first with one line naming it)."""
    if file is None:
        return "settings file: none (DOCCHECK_ENV_FILE is not set)"
    return f"settings file: {file} (DOCCHECK_ENV_FILE; the environment wins over it)"


def _block_values() -> dict[str, Any]:
    """What the blocks named in the settings hold (the integration reads them)."""
    from doccheck.config import load_settings
    from doccheck.pipeline import prefect_integration

    service = load_settings().service
    return prefect_integration().block_settings(service.credentials_block, service.api_key_block)


def _shown(value: Any, secret: bool, mask: str) -> Any:
    """A value as JSON shows it; a set secret as the mask, never its text."""
    if value is None:
        return None
    if secret:
        return mask
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    if isinstance(value, bool | int | float):
        return value
    return str(value)


_PAGE_HEAD = """# Configuration

<!-- Generated from doccheck.config.Settings by `doccheck config --markdown > docs/configuration.md`;
tests/unit/test_settings.py fails when this page and the model disagree. -->

Every setting is a `DOCCHECK_*` variable, a typed field of one model (`doccheck.config.Settings`),
in groups. Where a value comes from, lowest first: the default below, the file named by
`DOCCHECK_ENV_FILE` (`NAME=value` lines, the same names), the environment, a Prefect block, a
flag or a notebook keyword argument. An empty variable counts as unset. `doccheck config` prints
the values in effect and where each came from (secrets masked; `--json` for scripts), the file
`DOCCHECK_ENV_FILE` names (a name that is not a file stops every command with one line), and the
retry worst case: how long one document can be retried before it is left `retry_later`.
`doccheck config --read-blocks` also reads the Prefect blocks named by `DOCCHECK_CREDENTIALS_BLOCK`
or `DOCCHECK_API_KEY_BLOCK` and `DOCCHECK_STORAGE_BLOCK`, as a deployment's run does. A
`DOCCHECK_*` variable that no setting reads (a typo) is named in a warning.

A value the program cannot use stops it before anything is sent or written: one line naming the
variable, the value (never a secret's) and what is expected, and exit code 2:

```text
error: DOCCHECK_CLAIM_LEASE_SECONDS='abc' (environment): Input should be a valid number, unable to parse string as a number
```

Secrets (the API key, the webhook signing secrets, the storage options) come, in this order, from a
flag or keyword argument, a Prefect block named by the run or by a `*_BLOCK` setting
(`DocCheckCredentials`, a `Secret` block, `DocCheckStorage`), the environment, and for the receiver
an owner-only secret file. Several webhook secrets (during a rotation) are written comma-separated,
wherever they come from.
"""


def configuration_markdown() -> str:
    """The reference page of every setting, group by group, from the model (nothing else)."""
    from doccheck.config import Settings, fields

    lines = [_PAGE_HEAD]
    group = None
    for f in fields():
        if f.group != group:
            group = f.group
            doc = (Settings.model_fields[group].annotation.__doc__ or "").strip()
            lines += [f"\n## `{group}`: {doc}\n", "| variable | type | default | meaning |", "|---|---|---|---|"]
        lines.append(f"| `{f.env}` | {_type_of(f.annotation)} | {default_text(f.default)} | {f.description} |")
    return "\n".join(lines) + "\n"


def default_text(value: Any) -> str:
    """A default as the tables show it (README and docs/configuration.md alike)."""
    if value is None or value == "":
        return "none"
    if isinstance(value, list | tuple):
        return "`" + ",".join(str(v) for v in value) + "`"
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value}`"


def _type_of(annotation: str) -> str:
    words = {"SecretStr": "secret", "FilePath": "file", "Path": "path", "float": "number", "int": "whole number",
             "bool": "true/false", "list[str]": "list", "str": "text"}  # fmt: skip
    kind = (
        "file"
        if "path_type='file'" in annotation
        else next((label for name, label in words.items() if name in annotation), "text")
    )
    return kind + (", optional" if "None" in annotation or "Optional" in annotation else "")
