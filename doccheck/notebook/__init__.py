"""The notebook API: DataFrames in, DataFrames out, the same run as ``doccheck run``.

Its modules are private; everything is imported from here. ``_api`` holds
``check_dataframe``/``acheck_dataframe``/``plan_dataframe`` and their results; ``_frames``
turns a DataFrame into manifest rows (which column plays which part); ``_progress`` the live
progress line (Jupyter, terminal or nothing: ``progress_display``); ``_review``
``set_disposition`` (the notebook's ``doccheck review``); ``_catalog`` ``catalog`` (the term's
DuckDB catalog, read-only).
"""

from __future__ import annotations

from doccheck.notebook._api import CheckResult, PlanResult, acheck_dataframe, check_dataframe, plan_dataframe
from doccheck.notebook._catalog import catalog
from doccheck.notebook._progress import RunProgress, progress_display
from doccheck.notebook._review import set_disposition

__all__ = [
    "CheckResult",
    "PlanResult",
    "RunProgress",
    "acheck_dataframe",
    "catalog",
    "check_dataframe",
    "plan_dataframe",
    "progress_display",
    "set_disposition",
]
