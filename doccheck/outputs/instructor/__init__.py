"""What an instructor opens: ``report.html``, the per-student table, the service's files.

- :mod:`._documents_table` builds one row per document (``documents.parquet`` schema);
- :mod:`._spreadsheet` writes it as a CSV safe for Excel and gradebook imports;
- :mod:`._page` renders the self-contained, offline ``report.html`` (and :mod:`._groups` one page
  per group with ``--group-by``), from the counts of :mod:`._tally` and the rows of :mod:`._table_view`;
- :mod:`._instructor_files` writes all three into a run folder and ``latest/``;
- :mod:`._run_outputs` (``write_run_outputs``) fetches the requested files, then writes them.

Callers import from here; the modules are private.

The files themselves are fetched by :mod:`doccheck.outputs._downloads`. No Prefect here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr
from doccheck.outputs.instructor._documents_table import (
    DOCUMENTS_SCHEMA,
    FLAG_SIMILARITY_SCORE,
    build_documents,
    documents_schema,
    documents_table,
    is_flagged,
)
from doccheck.outputs.instructor._evidence import PairTexts
from doccheck.outputs.instructor._instructor_files import (
    DOCUMENTS_CSV,
    DOCUMENTS_PARQUET,
    REPORT_HTML,
    InstructorPaths,
    names_from_ledger,
    read_run_tables,
    write_instructor_files,
)
from doccheck.outputs.instructor._page import render_report
from doccheck.outputs.instructor._spreadsheet import neutralise, write_csv
from doccheck.outputs.instructor._tally import group_column

if TYPE_CHECKING:
    from doccheck.outputs.instructor._evidence_texts import templates_of
    from doccheck.outputs.instructor._run_outputs import RunOutputs, write_run_outputs

__all__ = [
    "DOCUMENTS_CSV",
    "DOCUMENTS_PARQUET",
    "DOCUMENTS_SCHEMA",
    "FLAG_SIMILARITY_SCORE",
    "REPORT_HTML",
    "InstructorPaths",
    "PairTexts",
    "RunOutputs",
    "build_documents",
    "documents_schema",
    "documents_table",
    "group_column",
    "is_flagged",
    "names_from_ledger",
    "neutralise",
    "read_run_tables",
    "render_report",
    "templates_of",
    "write_csv",
    "write_instructor_files",
    "write_run_outputs",
]

#: Name → the private module that defines it, imported by ``__getattr__`` on first use: the run's
#: outputs fetch the service's files and refresh the term's catalog, which imports this package.
_LAZY = {
    "RunOutputs": "_run_outputs",
    "templates_of": "_evidence_texts",
    "write_run_outputs": "_run_outputs",
}


__getattr__ = _lazy_getattr(__name__, _LAZY)
