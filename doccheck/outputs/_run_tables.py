"""``<out>/tables/``: every run's tables in hive-style partitions, for engines without the catalog.

Why: polars (``scan_parquet(..., hive_partitioning=True)``), pyarrow datasets
(``partitioning="hive"``) and DuckDB (``read_parquet(..., hive_partitioning = true)``) read a
folder tree ``<table>/campaign=<campaign>/run=<run id>/<table>.parquet`` across runs in one call,
with ``campaign`` and ``run`` as columns. The run folders keep their names (the report page's
links, ``collect``, purge and every reader of ``<out>/<run>/`` are unchanged); this tree only holds
**relative symbolic links** to their files, one per run (the run's newest folder, as the
catalog's ``runs`` view: a ``collect``'s second folder of a run is not counted twice), never
``latest/`` nor an unfinished ``.partial`` folder. No copy of any row: purge removes the run
folders and rebuilds the tree with the catalog.

Values are URI-encoded (a campaign ``Hist 101`` is ``campaign=Hist%20101``), which the three
engines decode. The tree is rebuilt whole beside the old one and swapped in with renames.

On a store there are no links: each partition is a copy of the run folder's object made inside the
store (no byte through this process), made again only when its source's ETag or size changed;
partitions of runs no longer there (purged) are removed. A run's partitions are copied only once
its folder is complete (the catalog's runs are those whose ``run.json`` is there).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol, TypeAlias
from urllib.parse import quote

from doccheck.outputs._report_folders import swap_in
from doccheck.storage import Entry, UserPath, copy_file, display, files_under, remove_tree

__all__ = ["TABLES_DIR", "RunFiles", "rebuild_run_tables"]

log = logging.getLogger("doccheck.outputs")

TABLES_DIR = "tables"
#: Run folder name → the tables' files it holds (with their entries on a store, None on the disk).
RunFiles: TypeAlias = Mapping[str, Mapping[str, Entry | None]]


class _Run(Protocol):
    """A run of the catalog (``doccheck.outputs._term_catalog.RunEntry``): its id, campaign and folder."""

    @property
    def run_id(self) -> str: ...
    @property
    def campaign(self) -> str: ...
    @property
    def folder(self) -> str: ...


def rebuild_run_tables(
    out: UserPath, runs: Iterable[_Run], files: Mapping[str, str], listed: RunFiles
) -> UserPath | None:
    """Write ``<out>/tables/<name>/campaign=<c>/run=<id>/<file>`` links for each run folder that
    holds ``files[name]`` (as ``listed`` says); None (and a warning) where the file system has no
    symbolic links. On a store, copies (see the module docstring)."""
    if not isinstance(out, Path):
        return _copies_on_store(out, runs, files, listed)
    stage = out / f".{TABLES_DIR}.new-{uuid.uuid4().hex}"
    try:
        stage.mkdir()
        for run in runs:
            for name, filename in files.items():
                if filename not in listed.get(run.folder, {}):
                    continue
                partition = stage / _partition(name, run)
                partition.mkdir(parents=True)
                os.symlink(Path("..", "..", "..", "..", run.folder, filename), partition / filename)
        swap_in(stage, out / TABLES_DIR)
    except OSError as exc:
        log.warning("%s/%s not rebuilt: %s", out, TABLES_DIR, exc)
        return None
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
    return out / TABLES_DIR


def _partition(name: str, run: _Run) -> str:
    return f"{name}/campaign={quote(run.campaign, safe='')}/run={quote(run.run_id, safe='')}"


def _copies_on_store(out: UserPath, runs: Iterable[_Run], files: Mapping[str, str], listed: RunFiles) -> UserPath:
    """``tables/`` on a store: a copy per partition, made again only when its source changed."""
    tables = out / TABLES_DIR
    have = files_under(tables)  # one LIST
    want: dict[str, tuple[UserPath, Entry | None]] = {}
    for run in runs:
        present = listed.get(run.folder, {})
        for name, filename in files.items():
            if filename in present:
                want[f"{_partition(name, run)}/{filename}"] = (out / run.folder / filename, present[filename])
    for key, (source, entry) in want.items():
        old = have.get(key)
        if old is None or entry is None or entry.etag is None or (old.etag, old.size) != (entry.etag, entry.size):
            copy_file(source, tables / key)
    for key in sorted(set(have) - set(want)):
        remove_tree(tables / key)
    log.debug("%s: %d partitions", display(tables), len(want))
    return tables
