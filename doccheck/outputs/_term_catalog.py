"""The term in one file: ``<out>/catalog.duckdb``, views over every run folder's Parquet.

Why a catalog: after a term, ``--out`` holds one folder per run (and ``collect`` rewrites),
``latest/`` and reruns that repeat a campaign's earlier documents; a union of the folders
counts documents and money twice. The catalog says once, in SQL, which folder is a run's
(the newest of its folders), which run is a document's current state (the newest run of its
campaign that reported it) and where each table's files are, so one query answers "how many
essays per course, and what did they cost".

What it holds: the run metadata of each folder's ``run.json`` (ids, campaign, times, status,
folder name; no student data) and view definitions. The views read the run folders'
Parquet files in place (paths relative to the catalog, resolved through DuckDB's
``file_search_path``, so the whole ``--out`` folder can be copied or moved), tolerant of a
column added by a later version (``union_by_name``). A purge removes the files and rebuilds
the catalog: nothing of a student stays in it.

How it is written: rebuilt whole after every run, ``collect`` and purge, into a temporary file
renamed over ``catalog.duckdb``; a reader holding the old one open (read-only) keeps a
whole catalog and never blocks the writer (POSIX rename).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from doccheck.errors import CatalogError
from doccheck.outputs._parquet_reports import LATEST, SCHEMAS
from doccheck.outputs._run_tables import TABLES_DIR, rebuild_run_tables
from doccheck.outputs.instructor._documents_table import DOCUMENTS_SCHEMA

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "CATALOG_FILE",
    "RUN_FILE",
    "RUNS_TABLE",
    "SCHEMA_VERSION",
    "TABLE_FILES",
    "RunEntry",
    "connect",
    "describe_views",
    "rebuild_catalog",
    "rebuild_catalogs",
    "refresh_catalog",
    "run_entries",
    "write_run_file",
]

log = logging.getLogger("doccheck.outputs")

CATALOG_FILE = "catalog.duckdb"
#: Each run folder's metadata and table contract version (docs/tables.md).
RUN_FILE = "run.json"
#: Raised when a table's columns change meaning or a column is removed (an added column keeps it).
SCHEMA_VERSION = 1
#: The catalog's one table: a row per run (its newest folder), from the folders' ``run.json``.
RUNS_TABLE = "doccheck_runs"
#: View name → the Parquet file each run folder holds for it.
TABLE_FILES: dict[str, str] = {
    **{name: f"{name}.parquet" for name in SCHEMAS},
    "documents_history": "documents.parquet",
}
_TABLE_SCHEMAS: dict[str, pa.Schema] = {**SCHEMAS, "documents_history": DOCUMENTS_SCHEMA}


@dataclass(frozen=True)
class RunEntry:
    """A run as the catalog knows it: its ``run.json`` and its folder's name."""

    run_id: str
    campaign: str
    folder: str
    status: str | None
    started_at: datetime | None
    finished_at: datetime | None
    schema_version: int


def write_run_file(
    folder: Path | str,
    *,
    run_id: str,
    campaign: str,
    status: str | None = None,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
) -> Path:
    """Write ``<folder>/run.json`` (renamed into place): the run the folder belongs to and the
    table contract version it was written with."""
    data = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "campaign": campaign,
        "status": status,
        "started_at": started_at.isoformat() if started_at else None,
        "finished_at": finished_at.isoformat() if finished_at else None,
    }
    target = Path(folder) / RUN_FILE
    tmp = target.with_name(f".{RUN_FILE}.tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def run_entries(out: Path | str) -> list[RunEntry]:
    """The runs of ``out``: each run's newest complete folder holding a ``run.json`` (a
    ``collect`` writes a run again into a folder with a later time in its name), oldest first.
    ``latest/``, ``.partial`` and other hidden folders are never a run's."""
    root = Path(out)
    newest: dict[str, RunEntry] = {}
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        if folder.name.startswith(".") or folder.name == LATEST or not folder.is_dir():
            continue
        entry = _read_run_file(folder)
        if entry is not None and (entry.run_id not in newest or newest[entry.run_id].folder < entry.folder):
            newest[entry.run_id] = entry
    return sorted(
        newest.values(),
        key=lambda e: (e.started_at is None, e.started_at or datetime.min.replace(tzinfo=UTC), e.folder),
    )


def rebuild_catalog(out: Path | str) -> Path:
    """Write ``<out>/catalog.duckdb`` anew from the run folders (temporary file, then rename)."""
    import duckdb

    root = Path(out)
    entries = run_entries(root)
    target = root / CATALOG_FILE
    tmp = root / f".{CATALOG_FILE}.tmp-{uuid.uuid4().hex}"
    try:
        con = duckdb.connect(str(tmp), config={"file_search_path": str(root.resolve())})
        try:
            _create_runs_table(con, entries)
            for view in TABLE_FILES:
                _create_table_view(con, view, entries)
            _sql(con, _DOCUMENTS_VIEW)
            _sql(con, _RUNS_VIEW)
            _sql(con, "CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, target)
        rebuild_run_tables(root, entries, {Path(f).stem: f for f in TABLE_FILES.values()})  # the same runs, hive-style
    except duckdb.Error as exc:
        raise CatalogError(f"could not build {target}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
        tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)
    return target


def refresh_catalog(out: Path | str) -> Path | None:
    """:func:`rebuild_catalog` as a run's last step: a failure is logged, never raised (the
    run's reports are written and are the truth; the next run or ``collect`` rebuilds it).
    Nothing is written when the ``outputs.catalog`` setting is off (``DOCCHECK_CATALOG=false``)."""
    from doccheck.config import load_settings

    if not load_settings().outputs.catalog:
        return None
    try:
        return rebuild_catalog(out)
    except (CatalogError, OSError) as exc:
        log.warning("the catalog of %s was not rebuilt: %s", out, exc)
        return None


def rebuild_catalogs(roots: Iterable[Path | str]) -> list[Path]:
    """Rebuild the catalog (and ``tables/``) of each of ``roots`` that has one (``doccheck purge``,
    after removing run folders: neither may name, nor fail on, a folder that is gone)."""
    return [
        rebuild_catalog(root)
        for root in dict.fromkeys(Path(r) for r in roots)
        if (root / CATALOG_FILE).is_file() or (root / TABLES_DIR).is_dir()
    ]


def connect(location: Path | str) -> duckdb.DuckDBPyConnection:
    """The catalog, opened read-only: ``location`` is the ``--out`` folder or the catalog file.

    The same as ``duckdb.connect("reports/catalog.duckdb", read_only=True,
    config={"file_search_path": "reports"})``: the views' relative paths are found beside it."""
    import duckdb

    path = Path(location)
    if path.is_dir():
        path = path / CATALOG_FILE
    if not path.is_file():
        raise CatalogError(f"no catalog at {path}: a run or `doccheck collect` writes it into the --out folder")
    # Attached to a fresh in-memory database, not ``duckdb.connect(path)``: DuckDB keeps one instance per
    # path in a process, so a second connect would hand back the file a notebook held open before the
    # last rebuild (the old catalog, renamed over) instead of the current one.
    con = duckdb.connect(":memory:", config={"file_search_path": str(path.parent.resolve())})
    _sql(con, f"ATTACH {_quote(str(path))} AS catalog (READ_ONLY)")
    _sql(con, "USE catalog")
    return con


# --------------------------------------------------------------------------- internals


def _read_run_file(folder: Path) -> RunEntry | None:
    """The folder's ``run.json`` (None when absent or unreadable: not a run folder of this version)."""
    try:
        data = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
        return RunEntry(
            run_id=str(data["run_id"]),
            campaign=str(data["campaign"]),
            folder=folder.name,
            status=data.get("status"),
            started_at=_time(data.get("started_at")),
            finished_at=_time(data.get("finished_at")),
            schema_version=int(data.get("schema_version") or 0),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("%s is left out of the catalog: unreadable %s (%s)", folder, RUN_FILE, exc)
        return None


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _create_runs_table(con: duckdb.DuckDBPyConnection, entries: Iterable[RunEntry]) -> None:
    _sql(
        con,
        f"CREATE TABLE {RUNS_TABLE} (run_id VARCHAR PRIMARY KEY, campaign VARCHAR NOT NULL, folder VARCHAR NOT NULL,"
        " status VARCHAR, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, schema_version INTEGER)",
    )
    rows = [(e.run_id, e.campaign, e.folder, e.status, e.started_at, e.finished_at, e.schema_version) for e in entries]
    if rows:
        con.executemany(f"INSERT INTO {RUNS_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)", rows).fetchall()


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _create_table_view(con: duckdb.DuckDBPyConnection, view: str, entries: Iterable[RunEntry]) -> None:
    """``view``: the table's files of every run, with the run's ``run_id`` and ``campaign`` first.

    A table no run wrote is an empty table of the current schema (queries still bind)."""
    root = Path(_search_path(con))
    files = [f"{e.folder}/{TABLE_FILES[view]}" for e in entries if (root / e.folder / TABLE_FILES[view]).is_file()]
    if not files:
        empty = pa.schema([pa.field("run_id", pa.string()), pa.field("campaign", pa.string()),
                           *(f for f in _TABLE_SCHEMAS[view] if f.name not in ("run_id", "campaign"))])  # fmt: skip
        con.register("doccheck_empty", empty.empty_table())
        _sql(con, f'CREATE TABLE "{view}" AS SELECT * FROM doccheck_empty')
        con.unregister("doccheck_empty")
        return
    source = f"read_parquet([{', '.join(_quote(f) for f in files)}], union_by_name = true, filename = true)"
    present = {row[0] for row in _sql(con, f"DESCRIBE SELECT * FROM {source}")}
    dropped = ", ".join(c for c in ("filename", "run_id", "campaign") if c in present)
    _sql(
        con,
        f'CREATE VIEW "{view}" AS SELECT r.run_id, r.campaign, t.* EXCLUDE ({dropped}) FROM {source} AS t'
        f" JOIN {RUNS_TABLE} AS r ON r.folder = parse_path(t.filename)[-2]",
    )


def _search_path(con: duckdb.DuckDBPyConnection) -> str:
    rows = _sql(con, "SELECT current_setting('file_search_path')")
    return str(rows[0][0]) if rows else "."


def _sql(con: duckdb.DuckDBPyConnection, statement: str) -> list[Any]:
    """Run one statement to its end (DuckDB 2 keeps a result open until it is fetched)."""
    return con.execute(statement).fetchall()


#: The current state: one row per campaign and document, from the newest run that reported it.
_DOCUMENTS_VIEW = f"""
CREATE VIEW documents AS
SELECT h.* FROM documents_history AS h JOIN {RUNS_TABLE} AS r ON r.run_id = h.run_id
QUALIFY row_number() OVER (
    PARTITION BY h.campaign, h.document_id ORDER BY r.started_at DESC NULLS LAST, r.folder DESC
) = 1
"""

#: One row per run: its times, its documents, the checks it created and what they were charged.
_RUNS_VIEW = f"""
CREATE VIEW runs AS
SELECT r.run_id, r.campaign, r.status, r.started_at, r.finished_at,
       coalesce(d.documents, 0) AS documents, coalesce(d.new_checks, 0) AS new_checks,
       coalesce(d.charged_cents, 0) AS charged_cents, r.folder AS report_folder, r.schema_version
FROM {RUNS_TABLE} AS r LEFT JOIN (
    SELECT run_id, count(*) AS documents,
           count(DISTINCT check_id) FILTER (WHERE new_this_run) AS new_checks,
           CAST(sum(charged_cents) FILTER (WHERE new_this_run) AS BIGINT) AS charged_cents
    FROM documents_history GROUP BY run_id
) AS d ON d.run_id = r.run_id
"""


def describe_views() -> Mapping[str, str]:
    """View name → what it holds (docs/tables.md is generated from this and the schemas)."""
    return {
        "runs": "One row per run (its newest report folder): times, documents, new checks, charged cents.",
        "documents": "The current state: one row per campaign and document, from the newest run that reported it.",
        "documents_history": "Every run's documents.parquet (a rerun repeats its campaign's earlier documents).",
        **{name: f"Every run's {name}.parquet." for name in SCHEMAS},
    }
