"""What a purge must also reach besides the rows it deletes: report folders the ledger
never recorded, and the deleted text that a database keeps readable after DELETE.

- Folders: a run's reports are ``<out>/<campaign>-<stamp>-<run id prefix>/``
  (``doccheck.outputs.run_label``). Older runs stored their summary before the
  reports were written, so their ``report_dir`` is empty; :func:`scan_run_folders`
  finds their folders in the ``--out`` roots recorded by any run of the campaign. A root
  on a store (``s3://bucket/reports``) is listed in one request, and a folder a killed
  publish left without its ``run.json`` is found there as well; the local folder where its
  run folders were built (``doccheck.storage.scratch_folder``) is scanned too, for what a
  killed run left before publishing.
- Downloads: ``--download`` keeps every file it fetched (an ``original`` is the student's own
  document) in ``<out>/.files-cache/<check id>.<kind><ext>`` beside the run folders, for a bucket
  ``--out`` in its local scratch folder; :func:`cached_files` finds the purged checks' ones.
- SQLite: a DELETE leaves the text in free pages of the main file and in the ``-wal``
  file until a checkpoint. :func:`scrub_database` rewrites the file (``VACUUM``, with
  ``secure_delete`` on) and truncates the WAL (``wal_checkpoint(TRUNCATE)``).
- PostgreSQL: deleted rows stay in dead tuples until ``VACUUM``; :func:`scrub_database`
  vacuums the touched tables, or returns the command to run when the role may not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from doccheck.errors import StorageError
from doccheck.guards import safe_file_stem
from doccheck.storage import UserPath, display, resolve, scratch_folder, subfolders

_LABEL_STAMP = re.compile(r"-[0-9]{8}T[0-9]{9}Z-")
#: The downloads' cache beside the run folders (``doccheck.outputs.download_files``).
FILES_CACHE = ".files-cache"
#: What follows ``<check stem>.`` in a cached file's name: its kind and extension (``original.html.txt``).
_CACHED_REST = re.compile(r"[a-z_]+(\.[A-Za-z0-9]{1,8}){1,2}")
#: ... and in a download cut short: ``.<check stem>.<kind>.download``.
_STAGED_REST = re.compile(r"[a-z_]+\.download")
_SAFE_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def out_roots(report_dirs: Iterable[str]) -> list[UserPath]:
    """The ``--out`` folders (or a store's prefixes) of recorded report folders (each folder's
    parent), once each, and for a store the local folder its run folders were built in. A
    location this machine cannot read (a store whose extra is not installed) is left out."""
    roots: dict[str, UserPath] = {}
    for recorded in report_dirs:
        if not recorded:
            continue
        try:
            root = resolve(recorded).parent
        except StorageError:
            continue
        roots.setdefault(display(root), root)
        if not isinstance(root, Path):
            roots.setdefault(str(scratch_folder(root)), scratch_folder(root))
    return list(roots.values())


def scan_run_folders(roots: Sequence[UserPath], run_ids: Iterable[str]) -> list[UserPath]:
    """Folders in ``roots`` named like a report folder of one of ``run_ids`` (run and collect),
    complete or not (``.<label>.partial``, left by an interrupted write; on a store, a folder
    without its ``run.json``)."""
    prefixes = {run_id[:8] for run_id in run_ids if run_id}
    found: list[UserPath] = []
    for root in roots:
        for child in _children(root):
            if not _LABEL_STAMP.search(child.name):
                continue
            name = child.name.removesuffix(".partial")  # an incomplete run folder (doccheck.outputs._report_folders)
            if name.rsplit("-", 1)[-1] in prefixes:
                found.append(child)
    return found


def _children(root: UserPath) -> list[UserPath]:
    """The real folders of ``root`` (symbolic links left alone), by name; on a store one LIST."""
    if not isinstance(root, Path):
        return subfolders(root)
    if not root.is_dir():
        return []
    return sorted(c for c in root.iterdir() if not c.is_symlink() and c.is_dir())


def cached_files(roots: Sequence[UserPath], check_ids: Iterable[str]) -> list[Path]:
    """The files the downloads fetched for ``check_ids`` (and those a download cut short left) in
    the ``.files-cache`` folder of each local root: regular files only, named as the downloads
    name them (``doccheck.guards.safe_file_stem`` of the check id, its kind, its extension)."""
    stems = {safe_file_stem(check_id) for check_id in check_ids if check_id}
    found: list[Path] = []
    for root in roots:
        cache = root / FILES_CACHE if isinstance(root, Path) else None
        if cache is None or cache.is_symlink() or not cache.is_dir() or not stems:
            continue
        for child in sorted(cache.iterdir()):
            if not child.is_symlink() and child.is_file() and _cached_stem(child.name, stems):
                found.append(child)
    return found


def _cached_stem(name: str, stems: set[str]) -> bool:
    """Whether ``name`` is a cached file (or a cut-short download) of one of ``stems``."""
    staged = name.startswith(".")
    parts = name[1:].split(".") if staged else name.split(".")
    rest = _STAGED_REST if staged else _CACHED_REST
    # A stem may hold dots itself: try each split of the name into stem and the rest.
    return any(".".join(parts[:i]) in stems and rest.fullmatch(".".join(parts[i:])) for i in range(1, len(parts)))


def export_folders(manifests: Iterable[str | None]) -> list[Path]:
    """The folders an LMS export's documents were copied into (``<out>/exports/<campaign>/``)
    for the runs whose derived manifests are ``manifests``: only a real folder under an
    ``exports`` folder that holds a derived manifest's ``.lms.json`` sidecar, so nothing the
    user wrote by hand is ever taken for one."""
    return list(dict.fromkeys(Path(m).parent for m in manifests if m and is_export_folder(Path(m).parent)))


def is_export_folder(folder: Path) -> bool:
    """A real folder under ``exports`` holding a derived manifest's ``.lms.json`` sidecar."""
    if folder.parent.name != "exports" or folder.is_symlink() or not folder.is_dir():
        return False
    return any(child.name.endswith(".lms.json") and child.is_file() for child in folder.iterdir())


def scrub_database(engine: Engine, tables: Iterable[str]) -> list[str]:
    """Make deleted rows unreadable in the database files: what was done, or the command
    an administrator must run (a line each, for the purge output)."""
    touched = sorted({t for t in tables if _SAFE_TABLE.match(t)})
    if engine.dialect.name == "sqlite":
        return _scrub_sqlite(engine)
    if engine.dialect.name == "postgresql":
        return _scrub_postgres(engine, touched)
    return [f"{engine.dialect.name}: deleted rows may stay in the database files until its own vacuum"]


def _scrub_sqlite(engine: Engine) -> list[str]:
    raw = engine.raw_connection()  # the driver's own connection: VACUUM runs outside any transaction
    try:
        dbapi: Any = raw.driver_connection
        dbapi.commit()
        previous, dbapi.isolation_level = dbapi.isolation_level, None
        try:
            dbapi.execute("PRAGMA secure_delete=ON")
            dbapi.execute("VACUUM")
            busy = dbapi.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            dbapi.isolation_level = previous
    finally:
        raw.close()
    if busy:
        return ["sqlite: another process holds the ledger open; run `sqlite3 LEDGER 'PRAGMA wal_checkpoint(TRUNCATE)'`"]
    return ["sqlite: file rewritten (VACUUM) and write-ahead log truncated"]


def _scrub_postgres(engine: Engine, tables: list[str]) -> list[str]:
    if not tables:
        return []
    command = "VACUUM (FULL) " + ", ".join(f'"{t}"' for t in tables)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(command))
    except SQLAlchemyError:
        return [f"postgresql: this role may not vacuum; ask the owner to run: {command};"]
    return [f"postgresql: vacuumed {', '.join(tables)}"]


__all__ = ["FILES_CACHE", "cached_files", "out_roots", "scan_run_folders", "scrub_database"]
