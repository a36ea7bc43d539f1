"""What a run builds with pyarrow, built in a process that keeps pandas out as ``doccheck run``
does (``doccheck.commands.keep_pandas_unloaded``): the same tables, and pandas never loaded
(~32 MB of a term's peak RSS; a bare ``"true"`` and a ``to_numpy`` each loaded it at 100,000 documents)."""

from __future__ import annotations

import subprocess
import sys

# The reports of a run and its wide table (CSV), each table built and serialised (Arrow IPC) to compare the bytes; NaN must be null.
_BUILD = """
import hashlib, math, sys
import pyarrow as pa
from datetime import UTC, datetime
{prepare}
from doccheck.outputs._parquet_reports import ReportTables, to_tables
from doccheck.outputs.instructor._documents_table import documents_table
tables = to_tables(ReportTables(
    submissions=[{{"document_id": "a", "row_number": 1, "mode": "text", "check_id": "c-1",
                  "products": ("ai", "similarity"), "status": "completed", "words": 250, "cost_cents": 9}},
                 {{"document_id": "b", "products": "ai", "words": "12"}}],
    ai_results=[{{"document_id": "a", "score": math.nan, "completed_at": datetime(2026, 11, 22, tzinfo=UTC)}}],
    similarity_sources=[{{"document_id": "a", "source_id": "s-9", "percent": 42.0}}],
), {{"a": {{"course": "HIST 101"}}}})
tables["documents"] = documents_table([{{"document_id": "a", "words": 250, "meta_course": "=HIST 101"}}, {{"document_id": "b"}}])
import tempfile, pathlib
from doccheck.outputs.instructor._spreadsheet import CsvChunks
with tempfile.TemporaryDirectory() as folder, CsvChunks(pathlib.Path(folder) / "documents.csv", tables["documents"].column_names) as csv_file:
    csv_file.write_table(tables["documents"])  # the wide table of a large run: text, integer, boolean, float cells
from doccheck.outputs.instructor._groups import _by_group
_by_group(tables["documents"].to_batches()[0], "meta_course")  # a large run's group pages: rows ordered by group
assert tables["ai_results"].column("score").null_count == 1
digest = hashlib.sha256()
for name in sorted(tables):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, tables[name].schema) as writer:
        writer.write_table(tables[name])
    digest.update(sink.getvalue().to_pybytes())
print(digest.hexdigest(), "pandas" in sys.modules)
"""


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_reports_are_built_without_pandas_and_are_the_same_tables() -> None:
    without = _run(_BUILD.format(prepare="from doccheck.commands import keep_pandas_unloaded; keep_pandas_unloaded()"))
    usual = _run(_BUILD.format(prepare=""))
    assert without.split() == [usual.split()[0], "False"]
    assert usual.split()[1] == "True"  # what the command no longer pays for
