"""Each package's public names are its ``__all__``, pinned here (httpx's ``tests/test_exported_members.py``).

A name a package defines or imports without a leading underscore is exported (in ``__all__``)
or it is a mistake: either it is meant for users and other packages, or it is renamed
``_name``. Every exported member comes from the package itself (one of its private modules,
or a public submodule it lists) or from a shared bottom-layer module (the project's errors,
:mod:`doccheck.errors`, and domain types), so a package never re-exports another package's objects. To pin a new package, add one line
to ``PACKAGES``.
"""

from __future__ import annotations
import __future__

import importlib
import inspect
import types

import pytest

#: The packages whose ``__all__`` is pinned.
PACKAGES = [
    "doccheck",
    "doccheck.client",
    "doccheck.commands",
    "doccheck.emulator",
    "doccheck.extract",
    "doccheck.guards",
    "doccheck.ledger",
    "doccheck.matching",
    "doccheck.notebook",
    "doccheck.outputs",
    "doccheck.outputs.instructor",
    "doccheck.receiver",
    "doccheck.sources",
    "doccheck.sources.lms",
    "doccheck.sources.manifest",
    "doccheck.storage",
    "doccheck.webhooks",
    "prefect_doccheck",
    "prefect_doccheck.flows",
    "prefect_doccheck.tasks",
]

#: Dunder names a package may export (as httpx exports ``__version__``).
INCLUDED_PRIVATE_MEMBERS = {"__version__"}

#: Names bound for the type checker or the interpreter, not offered to users.
NOT_MEMBERS = {"TYPE_CHECKING"}

#: Shared bottom-layer modules whose objects any package may re-export: the project's errors
#: and its domain types.
SHARED_HOMES = {"doccheck.errors", "doccheck.domain"}


def _order(name: str) -> tuple[str, str]:
    """Case-blind, then by case: ``DOCUMENTS_SCHEMA`` and ``documents_schema`` sort the same way every run."""
    return (name.casefold(), name)


def _public_names(package: types.ModuleType) -> list[str]:
    """What the package binds without a leading underscore, plus what its ``__getattr__`` serves
    (a package that stays light imports some names on first use, listed in ``_LAZY``).

    A submodule is bound as an attribute once anything imports it, so a public submodule only
    counts when the package lists it as public (``_PUBLIC_MODULES``)."""
    public_modules = set(getattr(package, "_PUBLIC_MODULES", ()))
    names = {
        name
        for name, value in vars(package).items()
        if (not name.startswith("_") or name in INCLUDED_PRIVATE_MEMBERS)
        and not (isinstance(value, types.ModuleType) and name not in public_modules)
        and name not in NOT_MEMBERS
        and not isinstance(value, __future__._Feature)  # `from __future__ import annotations`
    }
    names |= set(getattr(package, "_LAZY", ())) | public_modules
    return sorted(names, key=_order)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_imports_are_exported(name: str) -> None:
    package = importlib.import_module(name)
    assert sorted(package.__all__, key=_order) == _public_names(package)
    assert len(set(package.__all__)) == len(package.__all__)


@pytest.mark.parametrize("name", PACKAGES)
def test_exported_members_come_from_the_package(name: str) -> None:
    package = importlib.import_module(name)
    outside = []
    for member_name in package.__all__:
        member = getattr(package, member_name)
        if isinstance(member, types.ModuleType):
            home = member.__name__
        elif inspect.isclass(member) or inspect.isfunction(member):
            home = member.__module__
        else:
            continue  # a constant or an alias has no home of its own
        if home != name and home not in SHARED_HOMES and not home.startswith(f"{name}."):
            outside.append(f"{member_name} ({home})")
    assert outside == []
