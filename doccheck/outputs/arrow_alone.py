"""Keep pandas out of a command's process: pyarrow would import it for nothing.

Why: every ``pa.array(...)`` asks "is this a pandas object?", and pyarrow answers the first
time by importing pandas when it is installed (it is: the notebook API returns DataFrames).
A ``doccheck run`` never holds a DataFrame, yet that import cost it 45 MB of resident memory
and ~0.4 s, in the report phase, where a term's first run reaches its peak (301 MB against a
300 MB target; issue 28).

:func:`arrow_without_pandas` makes pyarrow's first look fail (a finder that refuses ``pandas``
during one conversion), so pyarrow notes pandas as absent for that question; a later
``to_pandas()`` or ``from_pandas()`` asks again, finds pandas and works as usual. A process
that has imported pandas already is left alone. ``doccheck run`` and ``collect`` call it when they
run without Prefect; a flow run is left as it was (with it, the flow's SIGTERM stop was lost in
2 of 3 runs of ``tests/integration/test_cli_signals.py``, cause not found).
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["arrow_without_pandas"]


class _RefusePandas(importlib.abc.MetaPathFinder):
    """A finder that makes ``import pandas`` fail while it is first on ``sys.meta_path``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == "pandas":
            raise ModuleNotFoundError("pandas is not used by this command", name=fullname)
        return None


def arrow_without_pandas() -> None:
    """Tell pyarrow, for this process, not to import pandas to convert Python values (once; a
    no-op when pandas is imported already)."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    refuse = _RefusePandas()
    sys.meta_path.insert(0, refuse)
    try:
        pa.array([0])  # pyarrow's first look for pandas: refused, and remembered for conversions
    finally:
        sys.meta_path.remove(refuse)
