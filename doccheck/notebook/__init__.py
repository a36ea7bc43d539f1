"""The notebook API: DataFrames in, DataFrames out, the same run as ``doccheck run``.

:mod:`.api` holds ``check_dataframe``/``acheck_dataframe``/``plan_dataframe`` and their results;
:mod:`.frames` turns a DataFrame into manifest rows (which column plays which part);
:mod:`.progress` the live progress line (Jupyter, terminal or nothing);
:mod:`.review` ``set_disposition`` (the notebook's ``doccheck review``);
:mod:`.catalog` ``catalog`` (the term's DuckDB catalog, read-only).
"""

from __future__ import annotations

from doccheck.notebook.api import CheckResult, PlanResult, acheck_dataframe, check_dataframe, plan_dataframe
from doccheck.notebook.catalog import catalog
from doccheck.notebook.review import set_disposition

__all__ = [
    "CheckResult",
    "PlanResult",
    "acheck_dataframe",
    "catalog",
    "check_dataframe",
    "plan_dataframe",
    "set_disposition",
]
