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


def test_library_does_not_import_prefect() -> None:
    code = (
        "import sys, importlib, pkgutil, doccheck\n"
        "for m in pkgutil.walk_packages(doccheck.__path__, 'doccheck.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(m for m in sys.modules if m == 'prefect' or m.startswith('prefect.'))\n"
        "assert not bad, bad[:5]\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_emulator_imports_only_pure_shared_helpers() -> None:
    """The emulator stands for the remote service: tests that pass because both sides share
    the client, ledger or pipeline would prove nothing (DESIGN.md)."""
    code = (
        "import sys, importlib, pkgutil, doccheck.emulator as e\n"
        "for m in pkgutil.walk_packages(e.__path__, 'doccheck.emulator.'):\n"
        "    importlib.import_module(m.name)\n"
        "allowed = {'doccheck', 'doccheck.emulator', 'doccheck.extract', 'doccheck.signing',\n"
        "           'doccheck.bounded_json', 'doccheck.slow_clients'}\n"
        "bad = sorted(m for m in sys.modules if m.startswith('doccheck') and m not in allowed\n"
        "             and not m.startswith(('doccheck.emulator.', 'doccheck.extract.')))\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
