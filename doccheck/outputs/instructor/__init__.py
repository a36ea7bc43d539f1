"""What an instructor opens: ``report.html``, the per-student table, the service's files.

- :mod:`.table` builds one row per document (``documents.parquet`` schema);
- :mod:`.spreadsheet` writes it as a CSV safe for Excel and gradebook imports;
- :mod:`.page` renders the self-contained, offline ``report.html`` (and :mod:`.groups` one page
  per group with ``--group-by``), from the counts of :mod:`.tally` and the rows of :mod:`.table_view`;
- :mod:`.writer` writes all three into a run folder and ``latest/``.

The files themselves are fetched by :mod:`doccheck.outputs.downloads`. No Prefect here.
"""

from __future__ import annotations

from doccheck.outputs.instructor.page import render_report
from doccheck.outputs.instructor.spreadsheet import neutralise, write_csv
from doccheck.outputs.instructor.table import DOCUMENTS_SCHEMA, build_documents, documents_table, is_flagged
from doccheck.outputs.instructor.writer import (
    DOCUMENTS_CSV,
    DOCUMENTS_PARQUET,
    REPORT_HTML,
    InstructorPaths,
    names_from_ledger,
    read_run_tables,
    write_instructor_files,
)

__all__ = [
    "DOCUMENTS_CSV",
    "DOCUMENTS_PARQUET",
    "DOCUMENTS_SCHEMA",
    "REPORT_HTML",
    "InstructorPaths",
    "build_documents",
    "documents_table",
    "is_flagged",
    "names_from_ledger",
    "neutralise",
    "read_run_tables",
    "render_report",
    "write_csv",
    "write_instructor_files",
]
