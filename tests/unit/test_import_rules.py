"""The import rules (pyproject ``[tool.importlinter]``) hold: the library never imports
Prefect, the emulator never imports the client, ledger or pipeline, and no package among
the ledger, the pipeline and the emulator has an import cycle. Checked statically
by import-linter (also run by ``.ci/run`` as ``lint-imports``), which replaces the former
tests that imported every module in a subprocess and looked at ``sys.modules``."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert "0 broken" in out.stdout and f"{len(contracts)} kept" in out.stdout, out.stdout
    assert "No import cycle inside the ledger, the pipeline or the emulator KEPT" in out.stdout
