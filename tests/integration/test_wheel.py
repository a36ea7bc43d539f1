"""The built wheel, installed as a user would: into a clean virtual environment that
already holds two unrelated packages named ``tasks`` and ``flows``. Nothing may clash
(the flows and tasks ship as ``prefect_doccheck.flows`` / ``.tasks``), the deployment
files come along, and ``doccheck demo`` runs from the installed copy (not this clone).

Slow (~3 min: a full dependency install from the lock), so marked ``slow``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DUMMY_PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "unrelated-{name}"
version = "1.0"

[tool.setuptools]
packages = ["{name}"]
"""
PROBE = """
import tasks, flows
assert (tasks.MARKER, flows.MARKER) == ("unrelated tasks", "unrelated flows"), (tasks, flows)
import doccheck, prefect_doccheck
import prefect_doccheck.flows.bulk_check, prefect_doccheck.tasks.pipeline, prefect_doccheck.deployments.serve
from importlib.resources import files
assert files("prefect_doccheck.deployments").joinpath("prefect.yaml").is_file()
assert files("prefect_doccheck").joinpath("logo.png").is_file()
from prefect.plugins import load_prefect_collections
assert "prefect_doccheck" in load_prefect_collections()
print(doccheck.__file__)
print(prefect_doccheck.flows.bulk_check.__file__)
"""


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args[:4]} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_wheel_installs_beside_packages_named_tasks_and_flows_and_runs_the_demo(
    prefect_server: Any, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHECK_", "PYTHON", "VIRTUAL_ENV"))}
    wheels = tmp_path / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    (wheel,) = wheels.glob("doccheck-*.whl")
    for name in ("tasks", "flows"):
        package = tmp_path / f"unrelated-{name}" / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(f"MARKER = 'unrelated {name}'\n")
        (package.parent / "pyproject.toml").write_text(DUMMY_PYPROJECT.format(name=name))

    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    python = target / "bin" / "python"
    _run(
        [str(python), "-m", "pip", "install", "-q", "-c", str(ROOT / "requirements" / "constraints.txt"),
         f"{wheel}[emulator]", str(tmp_path / "unrelated-tasks"), str(tmp_path / "unrelated-flows")],
        cwd=tmp_path,
        env=env,
        timeout=900,
    )  # fmt: skip

    work = tmp_path / "work"
    work.mkdir()
    where = _run([str(python), "-c", PROBE], cwd=work, env=env, timeout=120).splitlines()
    site = str(target)
    assert all(line.startswith(site) for line in where), where  # the installed copy, not this clone

    shutil.copytree(ROOT / "sample_data", work / "sample_data", ignore=shutil.ignore_patterns("make_corpus.py"))
    demo_env = {**env, "PREFECT_API_URL": prefect_server.api_url, "COLUMNS": "120"}
    out = _run([str(target / "bin" / "doccheck"), "demo"], cwd=work, env=demo_env, timeout=400)
    assert "stopped the emulator and the receiver" in out, out
    assert (work / "reports" / "latest" / "ai_results.parquet").is_file()
