"""The term in one file: ``<out>/catalog.duckdb``, views over every run folder's Parquet.

Why a catalog: after a term, ``--out`` holds one folder per run (and ``collect`` rewrites),
``latest/`` and reruns that repeat a campaign's earlier documents; a union of the folders
counts documents and money twice. The catalog says once, in SQL, which folder is a run's
(the newest of its folders), which run is a document's current state (the newest run of its
campaign that reported it) and where each table's files are, so one query answers "how many
essays per course, and what did they cost".

What it holds: the run metadata of each folder's ``run.json`` (ids, campaign, times, status,
folder name; no student data) and view definitions. The views read the run folders'
Parquet files in place, tolerant of a column added by a later version (``union_by_name``).
A purge removes the files and rebuilds the catalog: nothing of a student stays in it.

Where the views find the files (docs/data.md says why this and not a copy of the tables): a
local catalog names them relative to itself, through its macro ``doccheck_folder()``: DuckDB
names the temporary folder of a database after the file it opened (``…/catalog.duckdb.tmp``),
so the folder of the catalog is known to any DuckDB that opened it, whatever its working
directory and wherever the ``--out`` folder was copied or moved; a DuckDB that opened it some
other way (``ATTACH`` in a session of another database, a ``temp_directory`` of its own) reads
the folder where the catalog was built. On a store the views name the objects' URLs
(``s3://bucket/reports/<run>/documents.parquet``), which DuckDB reads through the fsspec
filesystem that :func:`connect` registers, or through its own ``httpfs``.

How it is written: rebuilt whole after every run, ``collect`` and purge, into a temporary file
renamed over ``catalog.duckdb`` (on a store: put whole, after the run folder it names); a reader
holding the old one open (read-only) keeps a whole catalog and never blocks the writer.
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from doccheck.errors import CatalogError
from doccheck.outputs._freed_memory import return_freed_memory
from doccheck.outputs._parquet_reports import LATEST, SCHEMAS
from doccheck.outputs._report_folders import MARKER
from doccheck.outputs._run_tables import TABLES_DIR, RunFiles, rebuild_run_tables
from doccheck.outputs.instructor._documents_table import DOCUMENTS_SCHEMA
from doccheck.storage import Entry, UserPath, copy_file, display, files_under, resolve, scratch_folder, subfolders

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
#: Each run folder's metadata and table contract version (docs/tables.md); on a store, the
#: object that says the folder is complete.
RUN_FILE = MARKER
#: The catalog's macro that says where its run folders are (see the module docstring).
FOLDER_MACRO = "doccheck_folder"
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


def run_entries(out: UserPath | str) -> list[RunEntry]:
    """The runs of ``out``: each run's newest complete folder holding a ``run.json`` (a
    ``collect`` writes a run again into a folder with a later time in its name), oldest first.
    ``latest/``, ``.partial`` and other hidden folders are never a run's. On a store: one
    listing of ``out``, then one read of each folder's ``run.json`` (a folder whose
    ``run.json`` is not there yet is being published, or was left by a killed process)."""
    root = resolve(out)
    newest: dict[str, RunEntry] = {}
    for folder in _folders(root):
        if folder.name.startswith(".") or folder.name in (LATEST, TABLES_DIR):
            continue
        entry = _read_run_file(folder)
        if entry is not None and (entry.run_id not in newest or newest[entry.run_id].folder < entry.folder):
            newest[entry.run_id] = entry
    return sorted(
        newest.values(),
        key=lambda e: (e.started_at is None, e.started_at or datetime.min.replace(tzinfo=UTC), e.folder),
    )


def rebuild_catalog(out: UserPath | str) -> UserPath:
    """Write ``<out>/catalog.duckdb`` anew from the run folders (temporary file, then rename; on a
    store, built on the local disk and put whole), then ``<out>/tables/``."""
    import duckdb

    root = resolve(out)
    entries = run_entries(root)
    listed: RunFiles = {e.folder: _table_files(root / e.folder) for e in entries}
    target = root / CATALOG_FILE
    scratch = scratch_folder(root)
    scratch.mkdir(parents=True, exist_ok=True)
    tmp = scratch / f".{CATALOG_FILE}.tmp-{uuid.uuid4().hex}"
    try:
        con = duckdb.connect(str(tmp))
        try:
            _quiet(con)
            if not isinstance(root, Path):
                con.register_filesystem(root.fs)  # the views' DESCRIBE reads the footers from the store
            _sql(con, _folder_macro(root))
            _create_runs_table(con, entries)
            for view in TABLE_FILES:
                _create_table_view(con, view, entries, listed)
            _sql(con, _DOCUMENTS_VIEW)
            _sql(con, _RUNS_VIEW)
            _sql(con, "CHECKPOINT")
        finally:
            con.close()
        if isinstance(target, Path):
            os.replace(tmp, target)
        else:
            copy_file(tmp, target)  # one object, put whole once the run folders it names are
        files = {Path(f).stem: f for f in TABLE_FILES.values()}
        rebuild_run_tables(root, entries, files, listed)  # the same runs, hive-style
    except duckdb.Error as exc:
        raise CatalogError(f"could not build {display(target)}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
        tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)
    return target


def refresh_catalog(out: UserPath | str) -> UserPath | None:
    """:func:`rebuild_catalog` as a run's last step: a failure is logged, never raised (the
    run's reports are written and are the truth; the next run or ``collect`` rebuilds it).
    Nothing is written when the ``outputs.catalog`` setting is off (``DOCCHECK_CATALOG=false``)."""
    from doccheck.config import load_settings

    if not load_settings().outputs.catalog:
        return None
    return_freed_memory()  # DuckDB loads next (~44 MB of RSS): the run's last step and its peak
    try:
        return rebuild_catalog(out)
    except (CatalogError, OSError) as exc:
        log.warning("the catalog of %s was not rebuilt: %s", display(resolve(out)), exc)
        return None


def rebuild_catalogs(roots: Iterable[UserPath | str]) -> list[UserPath]:
    """Rebuild the catalog (and ``tables/``) of each of ``roots`` that has one (``doccheck purge``,
    after removing run folders: neither may name, nor fail on, a folder that is gone)."""
    unique: dict[str, UserPath] = {}
    for root in roots:
        where = resolve(root)
        unique.setdefault(display(where), where)
    return [
        rebuild_catalog(root)
        for root in unique.values()
        if (root / CATALOG_FILE).is_file() or (root / TABLES_DIR).is_dir()
    ]


def connect(location: UserPath | str) -> duckdb.DuckDBPyConnection:
    """The catalog, opened read-only: ``location`` is the ``--out`` folder (or URL) or the catalog file.

    Locally the same as ``duckdb.connect("reports/catalog.duckdb", read_only=True)``; on a store,
    a connection whose views read the bucket through its fsspec filesystem
    (``register_filesystem``: DuckDB's ``httpfs`` need not be installed)."""
    import duckdb

    path = resolve(location)
    if path.suffix != ".duckdb" and (not isinstance(path, Path) or path.is_dir()):
        path = path / CATALOG_FILE
    if not path.is_file():
        raise CatalogError(
            f"no catalog at {display(path)}: a run or `doccheck collect` writes it into the --out folder"
        )
    # Attached to a fresh in-memory database, not ``duckdb.connect(path)``: DuckDB keeps one instance per
    # path in a process, so a second connect would hand back the file a notebook held open before the
    # last rebuild (the old catalog, renamed over) instead of the current one. The temporary folder is
    # the catalog's own (``catalog.duckdb.tmp``), as in a direct connect: its views find their folder by it.
    if isinstance(path, Path):
        con = duckdb.connect(":memory:", config={"temp_directory": f"{path}.tmp"})
        _sql(con, f"ATTACH {_quote(str(path))} AS catalog (READ_ONLY)")
    else:
        con = duckdb.connect(":memory:")
        con.register_filesystem(path.fs)  # the views' read_parquet of s3:// goes through it
        _attach_copy(con, path)
    _sql(con, "USE catalog")
    return con


def _attach_copy(con: duckdb.DuckDBPyConnection, path: UserPath) -> None:
    """Attach a store's catalog from a local copy (DuckDB's ATTACH of an ``s3://`` file asks for its
    ``httpfs`` extension even with a filesystem registered; the file is small: definitions and run
    metadata). On POSIX the copy is unlinked once attached (DuckDB keeps it open); elsewhere it
    stays in the scratch folder until the next one."""
    scratch = scratch_folder(path.parent)
    scratch.mkdir(parents=True, exist_ok=True)
    local = scratch / f".{CATALOG_FILE}.read-{uuid.uuid4().hex}"
    try:
        copy_file(path, local)
        _sql(con, f"ATTACH {_quote(str(local))} AS catalog (READ_ONLY)")
    finally:
        try:
            local.unlink(missing_ok=True)
        except OSError:  # Windows: a file DuckDB holds open cannot be removed
            pass


# --------------------------------------------------------------------------- internals


def _quiet(con: duckdb.DuckDBPyConnection) -> None:
    """No progress bar on stdout (a command prints no noise; a slow store's DESCRIBE drew one). In
    Jupyter without ipywidgets DuckDB refuses any change of the setting, and draws no bar there."""
    import duckdb

    try:
        _sql(con, "SET enable_progress_bar = false")
    except duckdb.Error:
        pass


def _folders(root: UserPath) -> list[UserPath]:
    """The folders of ``root``, by name (on the disk symbolic links to folders count, as they did)."""
    if isinstance(root, Path):
        return sorted(c for c in root.iterdir() if c.is_dir()) if root.is_dir() else []
    return subfolders(root)


def _table_files(folder: UserPath) -> dict[str, Entry | None]:
    """Which of the tables' files ``folder`` holds (on a store with their sizes and ETags, for
    ``tables/``: one delimited LIST of the folder; on the disk a stat each)."""
    if isinstance(folder, Path):
        return {f: None for f in dict.fromkeys(TABLE_FILES.values()) if (folder / f).is_file()}
    found = files_under(folder, recursive=False)
    return {f: found[f] for f in dict.fromkeys(TABLE_FILES.values()) if f in found}


#: Where a file name starts in a path: its start, or after a slash or a backslash (RE2 syntax).
_SEPARATOR = r"(^|[/\\])"


def _folder_macro(root: UserPath) -> str:
    """``doccheck_folder()``: the run folders' parent, with its separator. On a store the URL; on the
    disk the folder of the catalog DuckDB opened, read from its temporary folder's name
    (``…/catalog.duckdb.tmp``), else (another database opened first, a temporary folder set by
    hand) the folder where the catalog was built."""
    if not isinstance(root, Path):
        return f"CREATE MACRO {FOLDER_MACRO}() AS {_quote(display(root).rstrip('/') + '/')}"
    built = str(root.resolve()) + os.sep
    tail = re.escape(f"{CATALOG_FILE}.tmp") + "$"
    named = _quote(_SEPARATOR + tail)  # the temporary folder of a database file named catalog.duckdb
    setting = "current_setting('temp_directory')"
    return (
        f"CREATE MACRO {FOLDER_MACRO}() AS CASE WHEN regexp_matches({setting}, {named})"
        f" THEN regexp_replace({setting}, {_quote(tail)}, '') ELSE {_quote(built)} END"
    )


def _read_run_file(folder: UserPath) -> RunEntry | None:
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


def _create_table_view(
    con: duckdb.DuckDBPyConnection, view: str, entries: Iterable[RunEntry], listed: RunFiles
) -> None:
    """``view``: the table's files of every run, with the run's ``run_id`` and ``campaign`` first.

    A table no run wrote is an empty table of the current schema (queries still bind)."""
    files = [f"{e.folder}/{TABLE_FILES[view]}" for e in entries if TABLE_FILES[view] in listed[e.folder]]
    if not files:
        empty = pa.schema([pa.field("run_id", pa.string()), pa.field("campaign", pa.string()),
                           *(f for f in _TABLE_SCHEMAS[view] if f.name not in ("run_id", "campaign"))])  # fmt: skip
        con.register("doccheck_empty", empty.empty_table())
        _sql(con, f'CREATE TABLE "{view}" AS SELECT * FROM doccheck_empty')
        con.unregister("doccheck_empty")
        return
    paths = ", ".join(f"{FOLDER_MACRO}() || {_quote(f)}" for f in files)
    source = f"read_parquet([{paths}], union_by_name = true, filename = true)"
    present = {row[0] for row in _sql(con, f"DESCRIBE SELECT * FROM {source}")}
    dropped = ", ".join(c for c in ("filename", "run_id", "campaign") if c in present)
    _sql(
        con,
        f'CREATE VIEW "{view}" AS SELECT r.run_id, r.campaign, t.* EXCLUDE ({dropped}) FROM {source} AS t'
        f" JOIN {RUNS_TABLE} AS r ON r.folder = parse_path(t.filename)[-2]",
    )


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
