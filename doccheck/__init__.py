"""doccheck: bulk-check documents for AI-generated writing and similarity.

The library is usable without Prefect: a notebook or script can call the client,
the manifest reader, the ledger and the reports directly. Prefect flows in
``flows/`` add orchestration on top, never logic. ``docs/architecture.md`` maps the packages.
"""

from __future__ import annotations

__version__ = "0.1.0"

#: The notebook API (``doccheck.notebook``), imported on first use so that ``import doccheck``
#: stays light (no pandas, no HTTP client until asked for).
_LAZY = ("check_dataframe", "acheck_dataframe", "plan_dataframe", "CheckResult", "PlanResult", "catalog")

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from doccheck import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'doccheck' has no attribute {name!r}")
