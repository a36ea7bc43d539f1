"""A command's process keeps pandas out of pyarrow's first look (~32 MB of a run's peak); pandas is
still there when asked for by name. The reports built so: tests/unit/outputs/test_reports_without_pandas.py."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_pandas_is_still_there_when_asked_for_by_name() -> None:
    code = (
        "import sys, pyarrow as pa\n"
        "from doccheck.commands._pyarrow_without_pandas import keep_pandas_unloaded\n"
        "keep_pandas_unloaded(); pa.array(['x'], pa.string()); pa.array([1, None], pa.int64())\n"
        "before = 'pandas' in sys.modules\n"
        "frame = pa.table({'a': [1.0, None]}).to_pandas()\n"
        "print(before, type(frame).__name__, frame['a'].isna().tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False DataFrame [False, True]", out.stderr


def test_a_process_with_pandas_loaded_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """No finder is put in its way, and a Series still converts as a pandas object (NaN: null)."""
    import pandas as pd
    import pyarrow as pa

    from doccheck.commands._pyarrow_without_pandas import keep_pandas_unloaded

    inserted: list[object] = []

    class Recording(list):  # type: ignore[type-arg]
        def insert(self, index: int, finder: object) -> None:  # type: ignore[override]
            inserted.append(finder)
            super().insert(index, finder)

    monkeypatch.setattr(sys, "meta_path", Recording(sys.meta_path))
    keep_pandas_unloaded()
    assert inserted == []
    assert pa.array(pd.Series([1.0, float("nan")])).null_count == 1
