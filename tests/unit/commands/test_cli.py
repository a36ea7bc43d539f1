"""The console script exists and every command answers --help."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from doccheck.cli import app

COMMANDS = ["emulator", "receiver", "run", "collect", "demo", "purge"]

# In-process: one interpreter for every command's help (a subprocess each cost ~0.5 s).
runner = CliRunner()


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help(command: str | None) -> None:
    out = runner.invoke(app, ([command] if command else []) + ["--help"])
    assert out.exit_code == 0, out.output
    assert "Usage" in out.output


_HELP_IN_A_FRESH_INTERPRETER = """
import sys
from doccheck.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exit:
    code = exit.code or 0
print("PREFECT" if any(m == "prefect" or m.startswith("prefect.") for m in sys.modules) else "NO-PREFECT")
sys.exit(code)
"""


@pytest.mark.parametrize("command", [None, "run"])
def test_help_in_a_fresh_interpreter_imports_no_prefect(command: str | None) -> None:
    """The console script's help is quick: answering it never imports Prefect (it runs only with a flow)."""
    args = [sys.executable, "-c", _HELP_IN_A_FRESH_INTERPRETER] + ([command] if command else []) + ["--help"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout
    assert out.stdout.rstrip().endswith("NO-PREFECT"), out.stdout[-200:]


@pytest.mark.parametrize(("chosen", "expected"), [(None, "system"), ("jemalloc", "jemalloc")])
def test_a_command_process_uses_the_system_allocator_for_arrow_unless_told(chosen: str | None, expected: str) -> None:
    """mimalloc keeps what it freed: 20 MB more at the peak of a term (doccheck.commands)."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    code = "import doccheck.cli, pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == expected, out.stderr
