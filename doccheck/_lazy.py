"""A package's public names served from its private modules on first use (PEP 562).

Why: a package's ``__init__`` is its pinned surface, but importing every private module
behind it would make the cheapest use pay for the dearest (``doccheck --help`` would load
Prefect, an extraction worker numpy, the emulator uvicorn). Each package keeps a table of
name → private module and gets its ``__getattr__`` from here, so the rule is written once.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, names: Mapping[str, str], modules: Collection[str] = ()) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: ``names`` maps a public name to the private module
    that defines it (``"_words"``, relative to the package), or to ``"_module:its_name"`` where
    the package names it differently; ``modules`` are public submodules returned whole."""

    def __getattr__(name: str) -> object:
        if name in modules:
            return importlib.import_module(f"{package}.{name}")
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        return getattr(importlib.import_module(f"{package}.{module}"), attribute or name)

    return __getattr__
