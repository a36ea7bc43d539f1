"""A package's modules are private and its callers import its ``__init__`` only.

Why pinned: with every module public, callers imported whichever module held a name, and
every move inside a package broke them. A package listed here keeps its internals in
``_name.py`` modules; code outside it (the library, the Prefect code, benchmarks, tests other
than the package's own unit tests) imports the names its ``__all__`` offers
(``tests/unit/test_exported_members.py``), and patches them there. To pin a package, add it to
``PUBLIC_MODULES``. The ledger and the pipeline pin theirs beside their unit tests
(``tests/unit/ledger/test_ledger_surface.py``, ``tests/unit/pipeline/test_public_surface.py``).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Package → the modules it keeps public on purpose: a public namespace (``bounded_json``,
#: ``cache``, the client's ``assumptions``), a ``python -m`` entry (``worker``, ``table_docs``), or a
#: module named by its path outside Python (below).
PUBLIC_MODULES = {
    "doccheck.client": {"assumptions"},
    "doccheck.commands": set(),
    # Started as `python -m doccheck.cli emulator` (the tests' fixture, `doccheck demo`): no module of
    # its own is run, so none is public.
    "doccheck.emulator": set(),
    "doccheck.extract": {"cache", "worker"},
    "doccheck.guards": {"bounded_json"},
    "doccheck.matching": set(),
    "doccheck.notebook": set(),
    "doccheck.outputs": {"table_docs"},
    "doccheck.outputs.instructor": set(),
    "doccheck.receiver": set(),
    "doccheck.sources": set(),
    "doccheck.sources.lms": set(),
    "doccheck.sources.manifest": set(),
    "doccheck.storage": set(),
    "doccheck.webhooks": set(),
    # `prefect block register -m prefect_doccheck.credentials` and the API page name the blocks'
    # module; the entry point `doccheck.integration` names `prefect_doccheck.integration`.
    "prefect_doccheck": {"credentials", "integration"},
    # deployments/prefect.yaml's entrypoints are paths (`flows/bulk_check.py:bulk_check`,
    # `flows/collect_results.py:collect_results`, `flows/shard.py:bulk_check_shard`) that Prefect
    # deployments already made keep referring to, or module paths of the installed package
    # (`prefect_doccheck.flows.shard.bulk_check_shard`, the container pools' and serve.py's);
    # deployments/serve.py and the README import them.
    "prefect_doccheck.flows": {"bulk_check", "collect_results", "shard"},
    "prefect_doccheck.tasks": set(),
}

#: Where a package lives in the repository when not at its import path (pyproject's package-dir).
FOLDERS = {"prefect_doccheck.flows": "flows", "prefect_doccheck.tasks": "tasks"}

#: A package's own unit tests, which may import its modules: ``tests/unit/<package>/`` unless named here.
OWN_TESTS = {
    "prefect_doccheck": "prefect_doccheck",
    "prefect_doccheck.flows": "prefect_doccheck",
    "prefect_doccheck.tasks": "prefect_doccheck",
}

#: Where callers live.
CALLERS = ("doccheck", "flows", "tasks", "prefect_doccheck", "deployments", "benchmarks", "tests", "docs/tools")

#: Benchmarks that time a package's internals themselves, each with the package it may reach into.
INSTRUMENTS = {
    # the reader in-process against the worker pool
    "benchmarks/extract_bounds.py": "doccheck.extract",
    "benchmarks/extract_command.py": "doccheck.extract",
    # the signing against datasketch's
    "benchmarks/cohort_matching.py": "doccheck.matching",
    # the library run's command, wrapped function by function
    "benchmarks/profile_command.py": "doccheck.commands",
    # every webhook sender of the emulator, signed as it signs, against a receiver
    "benchmarks/receiver_flood.py": "doccheck.emulator",
    # an export's zip on a store read each way: its read-ahead block and member order swapped
    "benchmarks/lms_zip_reads.py": "doccheck.sources.lms",
}

#: ``from doccheck.x[._y] import a, _b`` (names up to the closing parenthesis), also inside a string
#: of code a test runs in another process; ``import doccheck.x._y``; a patch target
#: ``"doccheck.x._y.name"``. Regular expressions, not ``ast``: CPython 3.11's parser raises
#: SystemError when an earlier test of the session left the recursion limit changed.
FROM_IMPORT = re.compile(r"\bfrom ((?:prefect_)?doccheck[\w.]*) import (\([^)]*\)|[^\n\"';]*)")
PLAIN_IMPORT = re.compile(r"^\s*import ((?:prefect_)?doccheck[\w.]*)", re.MULTILINE)
PATCH_TARGET = re.compile(r"[\"']((?:prefect_)?doccheck\.[\w.]*)[\"']")


def _folder(package: str) -> Path:
    return ROOT / FOLDERS.get(package, package.replace(".", "/"))


def _own_tests(package: str) -> Path:
    return ROOT / "tests" / "unit" / (OWN_TESTS.get(package) or package.split(".")[1])


def _home(package: str) -> Path:
    """The folder whose code may use the package's modules: a subpackage's parent may."""
    parts = package.split(".")
    return _folder(".".join(parts[:2])) if parts[0] == "doccheck" and len(parts) > 2 else _folder(package)


def _pinned_package(module: str) -> str | None:
    """The most specific pinned package ``module`` belongs to."""
    owners = [p for p in PUBLIC_MODULES if module == p or module.startswith(f"{p}.")]
    return max(owners, key=len, default=None)


def _reaches_inside(module: str, package: str, names: str = "") -> bool:
    """Whether ``from module import names`` (or the dotted path ``module``) reaches past ``package``'s
    ``__init__``: a private module, or a private name of the package itself."""
    rest = module[len(package) :]
    imported = re.sub(r"\bas\s+\w+", "", names.split("#")[0])  # the names, not what they are bound to
    return "._" in rest or re.search(r"(?<![\w.])_\w+", imported) is not None


def _reaching_lines(text: str) -> list[tuple[str, str]]:
    """(package, line) for each line of ``text`` that reaches past a pinned package's ``__init__``."""
    found = [(match.group(1), match.group(2), match.group(0)) for match in FROM_IMPORT.finditer(text)]
    found += [(match.group(1), "", match.group(0)) for match in PLAIN_IMPORT.finditer(text)]
    found += [(match.group(1), "", match.group(0)) for match in PATCH_TARGET.finditer(text)]
    return [
        (package, line.strip())
        for module, names, line in found
        if (package := _pinned_package(module)) and _reaches_inside(module, package, names)
    ]


@functools.cache
def _reaching_callers() -> tuple[tuple[Path, str, str], ...]:
    """(path, package, line) of every caller's line that reaches inside a package, read once."""
    return tuple(
        (path, package, line)
        for folder in CALLERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != Path(__file__).resolve()  # its examples below
        for package, line in _reaching_lines(path.read_text(encoding="utf-8"))
    )


@pytest.mark.parametrize("package", sorted(PUBLIC_MODULES))
def test_the_modules_of_the_package_are_private(package: str) -> None:
    folder = _folder(package)
    public = {path.stem for path in folder.glob("*.py") if path.name != "__init__.py" and not path.name.startswith("_")}
    assert public == PUBLIC_MODULES[package]
    subpackages = {
        f"{package}.{path.parent.name}" for path in folder.glob("*/__init__.py") if not path.parent.name.startswith("_")
    }
    assert subpackages <= set(PUBLIC_MODULES), "a public subpackage is pinned too (or private: _name/)"


@pytest.mark.parametrize("package", sorted(PUBLIC_MODULES))
def test_callers_outside_the_package_import_its_init_only(package: str) -> None:
    found = [
        f"{path.relative_to(ROOT)}: {line}"
        for path, owner, line in _reaching_callers()
        if owner == package
        and _home(package) not in path.parents
        and _own_tests(package) not in path.parents
        and INSTRUMENTS.get(str(path.relative_to(ROOT))) != package
    ]
    assert found == []


def test_the_rule_sees_each_way_of_reaching_inside() -> None:
    """What the scan must find, and what it must leave, in a caller's text."""
    text = (
        "from doccheck.sources.manifest._files import extract\n"
        "from doccheck.client import _profile as service_profile\n"
        "from doccheck.client import (\n    Event,\n    _retry,\n)\n"
        "import doccheck.emulator._runtime\n"
        'monkeypatch.setattr("prefect_doccheck.tasks._pipeline.open_client", spy)\n'
        'code = "import sys; from doccheck.matching._cohort import match_cohort"\n'
        "from doccheck.client import Event, reset_profile as _reset  # bound privately: fine\n"
        "from prefect_doccheck.flows.bulk_check import bulk_check\n"
        'monkeypatch.setattr("doccheck.extract.extract", counting)\n'
    )
    found = Counter(package for package, _line in _reaching_lines(text))
    assert found == {
        "doccheck.sources.manifest": 1,
        "doccheck.client": 2,
        "doccheck.emulator": 1,
        "prefect_doccheck.tasks": 1,
        "doccheck.matching": 1,
    }
