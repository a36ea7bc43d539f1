"""The built wheel, installed as a user would, beside two unrelated packages named ``tasks``
and ``flows``: nothing may clash (the flows and tasks ship as ``prefect_doccheck.flows`` /
``.tasks``), the deployment files and the Prefect collection's entry point come along, and
``doccheck demo`` runs from the installed copy (not this clone).

The wheel is built once and read as a zip for what it ships. It is then installed with
pip (``--no-deps``) into a fresh virtual environment that sees this environment's
third-party packages through a ``.pth`` file (every one but doccheck itself and its editable
finder): what the demo proves is the wheel's own files, and a full dependency install from the
lock (~3-4 minutes, most of this test before) proved nothing the wheel's files do not.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import tasks, flows
assert (tasks.MARKER, flows.MARKER) == ("unrelated tasks", "unrelated flows"), (tasks, flows)
import doccheck, prefect_doccheck
import prefect_doccheck.flows.bulk_check, prefect_doccheck.tasks, prefect_doccheck.deployments.serve
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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel`` of this checkout, built once for the module."""
    wheels = tmp_path_factory.mktemp("wheels")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHECK_", "PYTHON", "VIRTUAL_ENV"))}
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
         cwd=wheels, env=env, timeout=300)  # fmt: skip
    (built,) = wheels.glob("doccheck-*.whl")
    return built


def test_the_wheel_ships_two_top_level_packages_the_deployment_files_and_the_entry_points(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        points = configparser.ConfigParser()
        points.read_string(archive.read(entry_points).decode())
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"doccheck", "prefect_doccheck"}, tops  # no top-level tasks, flows or deployments
    assert {"prefect_doccheck/deployments/prefect.yaml", "prefect_doccheck/logo.png"} <= set(names)
    assert {"prefect_doccheck/flows/bulk_check.py", "prefect_doccheck/tasks/_pipeline.py"} <= set(names)
    assert dict(points["prefect.collections"]) == {"prefect_doccheck": "prefect_doccheck"}
    assert points["console_scripts"]["doccheck"].startswith("doccheck.")


def _environment_beside(target: Path, tmp_path: Path) -> Path:
    """A fresh venv at ``target`` that sees this one's third-party packages, not doccheck; its python."""
    venv.create(target, with_pip=False, symlinks=True)
    python = target / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=tmp_path, env=dict(os.environ), timeout=60).strip())  # fmt: skip
    ours = Path(sysconfig.get_paths()["purelib"])
    deps = tmp_path / "deps"  # this environment's packages, but for doccheck and its editable install
    deps.mkdir()
    for entry in ours.iterdir():
        if not entry.name.startswith(("doccheck", "__editable__", "prefect_doccheck", "tasks", "flows")):
            (deps / entry.name).symlink_to(entry)
    (site / "this-environments-packages.pth").write_text(f"{deps}\n")
    for name in ("tasks", "flows"):  # the unrelated packages a user already has
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(f"MARKER = 'unrelated {name}'\n")
    return python


def test_wheel_installs_beside_packages_named_tasks_and_flows_and_runs_the_demo(
    prefect_server: Any, wheel: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHECK_", "PYTHON", "VIRTUAL_ENV"))}
    target = tmp_path / "venv"
    python = _environment_beside(target, tmp_path)
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
         cwd=tmp_path, env=env, timeout=300)  # fmt: skip

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
