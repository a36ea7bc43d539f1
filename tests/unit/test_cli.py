"""The console script exists and every command answers --help."""

from __future__ import annotations

import subprocess
import sys

import pytest

COMMANDS = ["emulator", "receiver", "run", "collect", "demo", "purge"]


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help(command: str | None) -> None:
    args = [sys.executable, "-m", "doccheck.cli"] + ([command] if command else []) + ["--help"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout
