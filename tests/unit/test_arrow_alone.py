"""A command's process converts with pyarrow without importing pandas, and pandas still works after."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_arrow_converts_without_importing_pandas_and_to_pandas_still_works() -> None:
    """In a fresh interpreter (pandas not imported yet): the reports' conversions leave pandas
    out; a DataFrame asked for later still comes, and pandas objects convert after that."""
    script = textwrap.dedent(
        """
        import sys
        import pyarrow as pa
        from doccheck.outputs.arrow_alone import arrow_without_pandas
        from doccheck.outputs.instructor.table import documents_table
        arrow_without_pandas()
        arrow_without_pandas()  # twice: harmless
        pa.array(["a", None]); pa.Table.from_pylist([{"a": 1}]); documents_table([{"document_id": "d1"}])
        assert "pandas" not in sys.modules, "pandas was imported"
        assert not any(type(f).__name__ == "_RefusePandas" for f in sys.meta_path)
        frame = pa.table({"a": [1, 2]}).to_pandas()
        import pandas as pd
        assert frame.shape == (2, 1) and pa.array(pd.Series([1.5, None])).null_count == 1
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
