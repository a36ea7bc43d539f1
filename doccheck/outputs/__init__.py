"""What a run leaves behind: Parquet reports, the instructor's page and files, the service's files.

The Parquet reports (pyarrow schemas, the run folder and ``latest/``: ``write_reports``,
``to_tables``, ``to_dataframes``), the term's DuckDB catalog over the run folders
(``connect_catalog``, ``rebuild_catalogs``), the service's files (``download_files``), the
report's AI rules (``AiRules``), the reasons a row was not checked said in words
(``count_by_reason``), and untrusted values as literal Markdown for Prefect artifacts
(``escape_markdown``). The instructor's ``report.html`` and ``documents.parquet``/``.csv`` are
:mod:`doccheck.outputs.instructor`'s. ``python -m doccheck.outputs.table_docs > docs/tables.md``
writes the tables' reference page. The modules are private; the errors are in :mod:`doccheck.errors`.

This ``__init__`` imports nothing of its own: each name is imported on first use, so that a
caller that needs the Markdown escape or the reasons' words does not load pyarrow and DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from doccheck.outputs._calibration import RULE_OPTIONS, AiRules, rules_from_params
    from doccheck.outputs._downloads import DownloadTarget, download_files, parse_kinds
    from doccheck.outputs._lms_columns import NO_SUBMISSION, NOT_A_DOCUMENT, SUPERSEDED, lms_rows
    from doccheck.outputs._markdown import escape_markdown
    from doccheck.outputs._parquet_reports import (
        COHORT_MATCHES_SCHEMA,
        META_PREFIX,
        REPORT_FILES,
        SCHEMAS,
        SUBMISSIONS_SCHEMA,
        LedgerReportTables,
        ReportPaths,
        ReportTables,
        rejection_rows,
        run_label,
        to_dataframes,
        to_tables,
        write_reports,
    )
    from doccheck.outputs._said import CHECKED_AS_TEXT, REASON_WORDS, count_by_reason
    from doccheck.outputs._term_catalog import (
        CATALOG_FILE,
        SCHEMA_VERSION,
        TABLE_FILES,
        rebuild_catalog,
        rebuild_catalogs,
        write_run_file,
    )
    from doccheck.outputs._term_catalog import connect as connect_catalog

__all__ = [
    "CATALOG_FILE",
    "CHECKED_AS_TEXT",
    "COHORT_MATCHES_SCHEMA",
    "META_PREFIX",
    "NOT_A_DOCUMENT",
    "NO_SUBMISSION",
    "REASON_WORDS",
    "REPORT_FILES",
    "RULE_OPTIONS",
    "SCHEMAS",
    "SCHEMA_VERSION",
    "SUBMISSIONS_SCHEMA",
    "SUPERSEDED",
    "TABLE_FILES",
    "AiRules",
    "DownloadTarget",
    "LedgerReportTables",
    "ReportPaths",
    "ReportTables",
    "connect_catalog",
    "count_by_reason",
    "download_files",
    "escape_markdown",
    "lms_rows",
    "parse_kinds",
    "rebuild_catalog",
    "rebuild_catalogs",
    "rejection_rows",
    "rules_from_params",
    "run_label",
    "to_dataframes",
    "to_tables",
    "write_reports",
    "write_run_file",
]

#: Name → the private module that defines it, imported by ``__getattr__`` on first use.
_LAZY = {
    "AiRules": "_calibration",
    "RULE_OPTIONS": "_calibration",
    "rules_from_params": "_calibration",
    "DownloadTarget": "_downloads",
    "download_files": "_downloads",
    "parse_kinds": "_downloads",
    "NO_SUBMISSION": "_lms_columns",
    "NOT_A_DOCUMENT": "_lms_columns",
    "SUPERSEDED": "_lms_columns",
    "lms_rows": "_lms_columns",
    "escape_markdown": "_markdown",
    "COHORT_MATCHES_SCHEMA": "_parquet_reports",
    "META_PREFIX": "_parquet_reports",
    "REPORT_FILES": "_parquet_reports",
    "SCHEMAS": "_parquet_reports",
    "SUBMISSIONS_SCHEMA": "_parquet_reports",
    "LedgerReportTables": "_parquet_reports",
    "ReportPaths": "_parquet_reports",
    "ReportTables": "_parquet_reports",
    "rejection_rows": "_parquet_reports",
    "run_label": "_parquet_reports",
    "to_dataframes": "_parquet_reports",
    "to_tables": "_parquet_reports",
    "write_reports": "_parquet_reports",
    "CHECKED_AS_TEXT": "_said",
    "REASON_WORDS": "_said",
    "count_by_reason": "_said",
    "CATALOG_FILE": "_term_catalog",
    "SCHEMA_VERSION": "_term_catalog",
    "TABLE_FILES": "_term_catalog",
    "connect_catalog": "_term_catalog:connect",
    "rebuild_catalog": "_term_catalog",
    "rebuild_catalogs": "_term_catalog",
    "write_run_file": "_term_catalog",
}


__getattr__ = _lazy_getattr(__name__, _LAZY)
