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
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol
from urllib.parse import quote

from doccheck.outputs._report_folders import swap_in

__all__ = ["TABLES_DIR", "rebuild_run_tables"]

log = logging.getLogger("doccheck.outputs")

TABLES_DIR = "tables"


class _Run(Protocol):
    """A run of the catalog (``doccheck.outputs._term_catalog.RunEntry``): its id, campaign and folder."""

    @property
    def run_id(self) -> str: ...
    @property
    def campaign(self) -> str: ...
    @property
    def folder(self) -> str: ...


def rebuild_run_tables(out: Path, runs: Iterable[_Run], files: Mapping[str, str]) -> Path | None:
    """Write ``<out>/tables/<name>/campaign=<c>/run=<id>/<file>`` links for each run folder that
    holds ``files[name]``; None (and a warning) where the file system has no symbolic links."""
    stage = out / f".{TABLES_DIR}.new-{uuid.uuid4().hex}"
    try:
        stage.mkdir()
        for run in runs:
            for name, filename in files.items():
                if not (out / run.folder / filename).is_file():
                    continue
                partition = (
                    stage / name / f"campaign={quote(run.campaign, safe='')}" / f"run={quote(run.run_id, safe='')}"
                )
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
