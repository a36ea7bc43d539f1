"""A command's process converts Python values to Arrow without loading pandas.

Why: pyarrow asks pandas, before converting any list to an array, whether the values are a
pandas object, and the first question imports pandas: ~290 modules and ~32 MB of a run's peak
RSS (a 2,000-document term, first run: 274 MB with it, 242 MB without; docs/benchmarks.md),
though no command builds a DataFrame. pyarrow tries that import once and remembers a failure,
so one conversion made while ``import pandas`` fails leaves every later conversion to treat
lists as lists, with the same values, nulls and errors. Where pandas is asked for by name
(``to_pandas``), pyarrow imports it for real; so does a conversion without a type (inferring
one consults pandas): every report is built to its schema.

Only for a command's own process (``run``, ``collect``): there no pandas object is handed to
pyarrow. A process that has already loaded pandas (a notebook, the tests) is left alone.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["keep_pandas_unloaded"]


class _PandasAbsent:
    """A ``sys.meta_path`` finder for which pandas does not exist."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def keep_pandas_unloaded() -> None:
    """Let pyarrow's one try at importing pandas fail, unless pandas is loaded already."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    finder = _PandasAbsent()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([], pa.null())  # the first conversion: pyarrow tries pandas here, and remembers
    finally:
        sys.meta_path.remove(finder)
