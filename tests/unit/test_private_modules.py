"""A package's modules are private and its callers import its ``__init__`` only.

Why pinned: with every module public, callers imported whichever module held a name, and
every move inside a package broke them. A package listed here keeps its internals in
``_name.py`` modules; code outside it (the library, the Prefect code, benchmarks, tests other
than the package's own unit tests) imports the names its ``__all__`` offers
(``tests/unit/test_exported_members.py``). To pin a package, add it to ``PUBLIC_MODULES``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Package → the modules it keeps public on purpose: a public namespace (``bounded_json``,
#: ``cache``) or a ``python -m`` entry (``worker``, ``table_docs``).
PUBLIC_MODULES = {
    "doccheck.extract": {"cache", "worker"},
    "doccheck.guards": {"bounded_json"},
    "doccheck.outputs": {"table_docs"},
    "doccheck.outputs.instructor": set(),
}

#: Where callers live; a package's own unit tests (``tests/unit/<package>/``) may import its modules.
CALLERS = ("doccheck", "flows", "tasks", "prefect_doccheck", "deployments", "benchmarks", "tests")

#: Benchmarks that time a reader in-process against the worker pool: they need the reader itself.
INSTRUMENTS = {"benchmarks/extract_bounds.py", "benchmarks/extract_command.py"}

#: ``from doccheck.x[._y] import a, _b`` (names up to the closing parenthesis) and ``import doccheck.x._y``.
#: Regular expressions, not ``ast``: CPython 3.11's parser raises SystemError when an earlier test
#: of the session left the recursion limit changed.
FROM_IMPORT = re.compile(r"^\s*from (doccheck[\w.]*) import (\([^)]*\)|[^\n]*)", re.MULTILINE)
PLAIN_IMPORT = re.compile(r"^\s*import (doccheck[\w.]*)", re.MULTILINE)


def _folder(package: str) -> Path:
    return ROOT.joinpath(*package.split("."))


def _own_tests(package: str) -> Path:
    return ROOT / "tests" / "unit" / package.split(".")[1]


def _private_imports(path: Path, package: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    hits = []
    for match in FROM_IMPORT.finditer(text):
        module, names = match.group(1), match.group(2)
        inside = module == package or module.startswith(f"{package}.")
        imported = re.sub(r"\bas\s+\w+", "", names.split("#")[0])  # the names, not what they are bound to
        if inside and ("._" in module or re.search(r"(?<![\w.])_\w+", imported)):
            hits.append(f"{path.relative_to(ROOT)}: {match.group(0).strip()}")
    for match in PLAIN_IMPORT.finditer(text):
        if match.group(1).startswith(f"{package}._"):
            hits.append(f"{path.relative_to(ROOT)}: {match.group(0).strip()}")
    return hits


@pytest.mark.parametrize("package", sorted(PUBLIC_MODULES))
def test_the_modules_of_the_package_are_private(package: str) -> None:
    public = {
        path.stem
        for path in _folder(package).glob("*.py")
        if path.name != "__init__.py" and not path.name.startswith("_")
    }
    assert public == PUBLIC_MODULES[package]


@pytest.mark.parametrize("package", sorted(PUBLIC_MODULES))
def test_callers_outside_the_package_import_its_init_only(package: str) -> None:
    top = _folder(".".join(package.split(".")[:2]))  # a subpackage's parent may use its modules
    found = [
        hit
        for folder in CALLERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if top not in path.parents
        and _own_tests(package) not in path.parents
        and str(path.relative_to(ROOT)) not in INSTRUMENTS
        for hit in _private_imports(path, package)
    ]
    assert found == []
