"""The real receiver command refuses secret sources that are not private, in one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from doccheck.webhooks import SecretFile
from tests.fixtures.emulator import free_port

pytestmark = pytest.mark.integration


def _receiver(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_WEBHOOK_SECRET")}
    cmd = [sys.executable, "-m", "doccheck.cli", "receiver", "--port", str(free_port()),
           "--database-url", f"sqlite:///{tmp_path / 'l.db'}", *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)


def test_world_readable_secret_file_is_refused(tmp_path: Path) -> None:
    f = SecretFile(tmp_path / "s.json")
    f.store("whsec_open_secret")
    f.path.chmod(0o644)
    out = _receiver(tmp_path, "--webhook-secret-file", str(f.path))
    assert out.returncode == 2
    assert "chmod 600" in out.stderr and "Traceback" not in out.stderr + out.stdout
    assert "whsec_open_secret" not in out.stderr + out.stdout


def test_no_secret_source_is_refused(tmp_path: Path) -> None:
    out = _receiver(tmp_path)
    assert out.returncode == 2
    assert "no signing secret" in out.stderr and "Traceback" not in out.stderr
