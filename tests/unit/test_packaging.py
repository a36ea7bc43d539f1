"""pyproject's explicit package list stays complete: setuptools cannot ``find`` packages
that ``package-dir`` maps into ``prefect_doccheck``, so a new sub-package must be listed by
hand, and this test says which one was forgotten (the wheel would silently lack it)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from tests.source_code import parse_source

ROOT = Path(__file__).resolve().parents[2]
MAPPED = {
    "flows": "prefect_doccheck.flows",
    "tasks": "prefect_doccheck.tasks",
    "deployments": "prefect_doccheck.deployments",
}


def _config() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _packages_on_disk() -> set[str]:
    found: set[str] = set()
    for top in ("doccheck", "prefect_doccheck", *MAPPED):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT).parts
            name = ".".join(parts)
            if parts[0] in MAPPED:
                name = ".".join((MAPPED[parts[0]], *parts[1:]))
            found.add(name)
    return found


def test_every_package_on_disk_is_listed() -> None:
    setuptools = _config()["tool"]["setuptools"]
    assert set(setuptools["packages"]) == _packages_on_disk()
    assert {v: k for k, v in setuptools["package-dir"].items()} == MAPPED


def test_no_top_level_tasks_or_flows_are_shipped() -> None:
    listed = _config()["tool"]["setuptools"]["packages"]
    assert not [p for p in listed if p.split(".")[0] in {"tasks", "flows", "deployments"}]


def test_package_data_names_files_that_exist() -> None:
    data = _config()["tool"]["setuptools"]["package-data"]
    assert (ROOT / "deployments" / "prefect.yaml").is_file() and "prefect.yaml" in data["prefect_doccheck.deployments"]
    assert (ROOT / "prefect_doccheck" / "logo.png").is_file() and "logo.png" in data["prefect_doccheck"]


def test_entry_point_names_the_integration_package() -> None:
    entry_points = _config()["project"]["entry-points"]["prefect.collections"]
    assert entry_points == {"prefect_doccheck": "prefect_doccheck"}


def test_every_package_says_its_one_job() -> None:
    """docs/architecture.md's map has a sentence a package; the package's own docstring says it too."""
    import ast

    silent = []
    for top in ("doccheck", "prefect_doccheck", *MAPPED):
        for init in sorted((ROOT / top).rglob("__init__.py")):
            docstring = ast.get_docstring(parse_source(init))
            if not docstring or len(docstring.split()) < 5:
                silent.append(str(init.relative_to(ROOT)))
    assert silent == []
