"""Write a run's instructor files: ``report.html``, ``documents.parquet``, ``documents.csv``.

Called after the Parquet reports are written (``doccheck.reports.write_reports``) and the
files downloaded (``doccheck.downloads``): it reads the run folder's reports back, so the
same code serves ``bulk_check``, ``collect_results`` and the notebook. The three files go in
the run folder and a copy in ``latest/``, where the page's file links point back into the
run folder (``../<run>/files/...``), since the files are not copied.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import pyarrow.parquet as pq

from doccheck.downloads import FILE_KINDS, files_by_document
from doccheck.instructor.page import render_report
from doccheck.instructor.spreadsheet import write_csv
from doccheck.instructor.table import build_documents, documents_table
from doccheck.reports import REPORT_FILES

__all__ = [
    "COHORT_MATCHES_FILE",
    "DOCUMENTS_CSV",
    "DOCUMENTS_PARQUET",
    "REPORT_HTML",
    "InstructorPaths",
    "names_from_ledger",
    "read_run_tables",
    "write_instructor_files",
]

REPORT_HTML = "report.html"
DOCUMENTS_PARQUET = "documents.parquet"
DOCUMENTS_CSV = "documents.csv"
#: Written by the cohort comparison when it ran (optional input).
COHORT_MATCHES_FILE = "cohort_matches.parquet"


@dataclass(frozen=True)
class InstructorPaths:
    """The files written in the run folder (the same names are in ``latest/`` when given)."""

    report_html: Path
    documents_parquet: Path
    documents_csv: Path
    latest_report_html: Path | None = None


def read_run_tables(run_dir: str | Path) -> dict[str, list[dict[str, Any]]]:
    """The run folder's Parquet reports as row dicts (a missing file is an empty table)."""
    folder = Path(run_dir)
    rows: dict[str, list[dict[str, Any]]] = {}
    for name, filename in REPORT_FILES.items():
        path = folder / filename
        rows[name] = pq.read_table(path).to_pylist() if path.is_file() else []
    return rows


def _read_cohort(run_dir: Path) -> list[dict[str, Any]] | None:
    path = run_dir / COHORT_MATCHES_FILE
    return pq.read_table(path).to_pylist() if path.is_file() else None


def names_from_ledger(ledger: Any, run_id: str) -> dict[str, str]:
    """document_id → name (the manifest's, or the file name) of a run's accepted documents."""
    from sqlmodel import select

    from doccheck.ledger.tables import DocumentRow

    with ledger.session() as s:
        rows = s.exec(select(DocumentRow.document_id, DocumentRow.name).where(DocumentRow.run_id == run_id)).all()
    return {doc: name for doc, name in rows if name}


def _atomic_text(target: Path, text: str) -> None:
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _atomic_copy(source: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        shutil.copy2(source, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_instructor_files(
    run_dir: str | Path,
    latest_dir: str | Path | None = None,
    *,
    campaign: str,
    run_id: str | None = None,
    status: str | None = None,
    names: Mapping[str, str] | None = None,
    tables: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    cohort_matches: Sequence[Mapping[str, Any]] | None = None,
    download_failures: Sequence[Mapping[str, Any]] = (),
    spent_cents: int | None = None,
) -> InstructorPaths:
    """Build the wide table and the page from the run folder and write them (+ ``latest/``).

    ``tables`` defaults to the run folder's Parquet reports, ``cohort_matches`` to its
    ``cohort_matches.parquet`` when present; the files already in ``<run>/files/`` are linked.
    """
    folder = Path(run_dir)
    tables = tables if tables is not None else read_run_tables(folder)
    if cohort_matches is None:
        # A report table of its own when the cohort comparison registers one, else its file.
        present = tables.get("cohort_matches")
        cohort_matches = list(present) if present is not None else _read_cohort(folder)
    ids = [str(r["document_id"]) for r in tables.get("submissions", []) if r.get("document_id") is not None]
    files = files_by_document(folder, ids, FILE_KINDS)
    rows = build_documents(tables, names=names, cohort_matches=cohort_matches, files=files)
    table = documents_table(rows)

    parquet_path = folder / DOCUMENTS_PARQUET
    tmp = folder / f".{DOCUMENTS_PARQUET}.tmp-{uuid.uuid4().hex}"
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, parquet_path)
    finally:
        tmp.unlink(missing_ok=True)
    csv_path = write_csv(folder / DOCUMENTS_CSV, table.column_names, table.to_pylist())
    page = dict(campaign=campaign, run_id=run_id, status=status, cohort_matches=cohort_matches,
                download_failures=download_failures, spent_cents=spent_cents)  # fmt: skip
    # Rendered once (the slow part for 10,000 rows); the file links' prefix differs per copy.
    marker = f"doccheck-link-prefix-{uuid.uuid4().hex}/"
    html = render_report(rows, link_prefix=marker, **cast(dict[str, Any], page))
    html_path = folder / REPORT_HTML
    _atomic_text(html_path, html.replace(marker, ""))

    latest_html: Path | None = None
    if latest_dir is not None:
        latest = Path(latest_dir)
        latest.mkdir(parents=True, exist_ok=True)
        _atomic_copy(parquet_path, latest / DOCUMENTS_PARQUET)
        _atomic_copy(csv_path, latest / DOCUMENTS_CSV)
        latest_html = latest / REPORT_HTML
        _atomic_text(latest_html, html.replace(marker, f"../{quote(folder.name)}/"))
    return InstructorPaths(html_path, parquet_path, csv_path, latest_html)
