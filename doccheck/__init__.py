"""doccheck: bulk-check documents for AI-generated writing and similarity.

The library is usable without Prefect: a notebook or script can call the client,
the manifest reader, the ledger and the reports directly. Prefect flows in
``flows/`` add orchestration on top, never logic. ``docs/architecture.md`` maps the packages.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

__version__ = "0.1.0"

#: The notebook API (``doccheck.notebook``), imported on first use so that ``import doccheck``
#: stays light (no pandas, no HTTP client until asked for).
_NOTEBOOK_API = ("check_dataframe", "acheck_dataframe", "plan_dataframe", "CheckResult", "PlanResult", "catalog")

__all__ = ["__version__", *_NOTEBOOK_API]

#: Module paths of release 0.1 that moved when the packages were laid out along the data's way.
#: They still import (with a DeprecationWarning) for one release, so notebooks and scripts written
#: against 0.1 keep working; new code imports the new path.
MOVED_MODULES: dict[str, str] = {
    "doccheck.bounded_json": "doccheck.guards.bounded_json",
    "doccheck.slow_clients": "doccheck.guards.slow_clients",
    "doccheck.signing": "doccheck.webhooks.signing",
    "doccheck.secret_file": "doccheck.webhooks.secret_file",
    "doccheck.markdown": "doccheck.outputs.markdown",
    "doccheck.reports": "doccheck.outputs.reports",
    "doccheck.downloads": "doccheck.outputs.downloads",
    "doccheck.instructor": "doccheck.outputs.instructor",
    "doccheck.manifest": "doccheck.sources.manifest",
    "doccheck.planning": "doccheck.pipeline.planning",
    "doccheck.plan_stream": "doccheck.pipeline.plan_stream",
    "doccheck.dry_run": "doccheck.pipeline.dry_run",
    "doccheck.options": "doccheck.pipeline.options",
    "doccheck.summary": "doccheck.pipeline.summary",
    "doccheck.notebook_progress": "doccheck.notebook.progress",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module path with the module at its new path (the same object)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED_MODULES[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old path goes in the next release", DeprecationWarning, 2)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module was executed under its new name already."""


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())


def __getattr__(name: str) -> Any:
    if name in _NOTEBOOK_API:
        from doccheck import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'doccheck' has no attribute {name!r}")
