"""A command's process keeps pandas out of pyarrow's first look (~32 MB of a run's peak); pandas is
still there when asked for by name. The reports built so: tests/unit/outputs/test_reports_without_pandas.py."""

from __future__ import annotations

import subprocess
import sys


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


def test_a_process_with_pandas_loaded_is_left_alone() -> None:
    import pandas as pd
    import pyarrow as pa

    from doccheck.commands._pyarrow_without_pandas import keep_pandas_unloaded

    finders = list(sys.meta_path)
    keep_pandas_unloaded()
    assert sys.meta_path == finders
    assert pa.array(pd.Series([1.0, float("nan")])).null_count == 1  # a Series is still seen as one
