"""The console script exists and every command answers --help."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
from pathlib import Path
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


@pytest.mark.parametrize("command", ["run", "collect"])
def test_an_out_url_carrying_a_secret_is_refused_masked(command: str, tmp_path: Path) -> None:
    """``--out`` takes a folder or a store's URL; one with credentials in it is refused before anything
    runs, in one line that does not show them (credentials come from the store's own chain)."""
    manifest = tmp_path / "m.csv"
    manifest.write_text("document_id,text\nd1,hello\n")
    args = [str(manifest)] if command == "run" else ["--campaign", "c"]
    out = runner.invoke(app, [command, *args, "--out", "s3://AKIAKEY:s3cr3tv4lue@bucket/reports", "--no-prefect"],
                        env={"DOCCHECK_BASE_URL": "http://127.0.0.1:9/api/v1", "DOCCHECK_API_KEY": "k"})  # fmt: skip
    assert out.exit_code == 2, out.output
    assert "must not carry credentials" in out.output and "s3cr3tv4lue" not in out.output
    assert "AKIAKEY" not in out.output
