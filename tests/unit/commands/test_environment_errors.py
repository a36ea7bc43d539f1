"""Environment errors said with their path, what to do and that a rerun is safe; a real
full file system is simulated with RLIMIT_FSIZE in a child process (no root needed)."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

from sqlalchemy.exc import OperationalError

from doccheck.commands._runner import describe_error, ledger_label
from doccheck.guards import describe_environment_error

CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
from doccheck.commands._runner import describe_error, ledger_label
from doccheck.guards import naming
try:
    with naming(sys.argv[1]), open(sys.argv[1], "wb") as f:
        f.write(b"x" * 100_000)
except OSError as exc:
    print(describe_error(exc))
"""


def test_full_disk_names_the_path(tmp_path: Path) -> None:
    err = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out" / "report.html"))
    assert "disk" not in describe_error(RuntimeError("writing reports failed"))
    wrapped = RuntimeError("writing reports failed")
    wrapped.__cause__ = err
    line = describe_error(wrapped)
    assert line.startswith("the disk is full at ") and "report.html" in line
    assert "free space" in line and "rerun the same command" in line and "Errno" not in line


def test_sqlite_full_names_the_ledger() -> None:
    exc = OperationalError("INSERT", {}, Exception("database or disk is full"))
    line = describe_environment_error(exc, ledger="sqlite:///var/doccheck.db")
    assert line is not None and "ledger" in line and "sqlite:///var/doccheck.db" in line


def test_the_command_names_the_ledgers_file_or_redacted_url(tmp_path: Path) -> None:
    exc = OperationalError("INSERT", {}, Exception("database or disk is full"))
    line = describe_error(exc, ledger_label(f"sqlite:///{tmp_path / 'ledger.db'}"))
    assert f"({tmp_path / 'ledger.db'})" in line and "rerun the same command" in line
    label = ledger_label("postgresql+psycopg://doccheck:s3cret@db.example:5432/doccheck")
    assert "s3cret" not in label and "db.example" in label


def test_file_size_limit_in_a_real_process(tmp_path: Path) -> None:
    target = tmp_path / "big.parquet"
    out = subprocess.run([sys.executable, "-c", CHILD, str(target)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert str(target) in out.stdout and "rerun the same command" in out.stdout
