"""The wide table, its CSV and the group pages of an earlier run's folder, made this run's.

Used when the folder's ``files`` digest is this run's (:mod:`doccheck.outputs._reuse`): the
rows are the same but for ``run_id`` and ``new_this_run``, and a group page differs from the one
this run would write only in the line that names the run. So the wide table is rewritten in
Arrow batches (the CSV and the entry page's tally made from the same batches), and each group
page is copied with that line written anew. A page that is missing, or is not the one the tally
expects, returns None: the caller then builds everything from the reports, as without reuse.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from doccheck.outputs._reuse import local_files, rewrite_table
from doccheck.outputs.instructor._documents_table import DOCUMENTS_CSV, DOCUMENTS_PARQUET
from doccheck.outputs.instructor._groups import GROUPS_FOLDER, swap_folder
from doccheck.outputs.instructor._page import run_line
from doccheck.outputs.instructor._spreadsheet import CsvChunks
from doccheck.outputs.instructor._tally import PageTally
from doccheck.storage import UserPath

__all__ = ["reuse_instructor_files"]

#: The line that names the run (``_run_line.html.j2``): one per page, on a line of its own.
_RUN_LINE = re.compile(r'^<p class="sub">run <code>.*</p>$', re.MULTILINE)


def reuse_instructor_files(
    folder: Path, previous: UserPath, tally: PageTally, *, campaign: str, run_id: str, status: str | None
) -> PageTally | None:
    """Write ``documents.parquet``/``.csv`` and ``groups/`` into ``folder`` from ``previous``
    (``tally``: an empty one with the run's rules and grouping, filled here); the tally, or None
    when ``previous`` cannot be reused (nothing is left half written then)."""
    with local_files(previous, [DOCUMENTS_PARQUET]) as source:
        columns = pq.ParquetFile(source / DOCUMENTS_PARQUET).schema_arrow.names
        with CsvChunks(folder / DOCUMENTS_CSV, columns) as csv_file:
            for batch in rewrite_table(source / DOCUMENTS_PARQUET, folder / DOCUMENTS_PARQUET, run_id):
                rows = batch.to_pylist()
                csv_file.write_table(pa.Table.from_batches([batch]))
                tally.add(rows)
    if not _copy_pages(folder, previous, tally, campaign=campaign, run_id=run_id, status=status):
        for name in (DOCUMENTS_PARQUET, DOCUMENTS_CSV):
            (folder / name).unlink(missing_ok=True)
        return None
    return tally


def _copy_pages(
    folder: Path, previous: UserPath, tally: PageTally, *, campaign: str, run_id: str, status: str | None
) -> bool:
    """``previous``'s group pages into ``folder/groups`` with this run's line; False (nothing
    written) when one the tally expects is missing or has no such line."""
    target = folder / GROUPS_FOLDER
    if not tally.grouped or tally.group_by is None:
        shutil.rmtree(target, ignore_errors=True)
        return True
    pages = [f"{GROUPS_FOLDER}/{group.slug}.html" for group in tally.groups.values()]
    tmp = folder / f".{GROUPS_FOLDER}.tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        line = _page_line(tally, campaign, run_id, status)
        try:
            with local_files(previous, pages) as source:
                for page in pages:
                    text, found = _RUN_LINE.subn(lambda _: line, (source / page).read_text(encoding="utf-8"), count=1)
                    if not found:
                        return False
                    (tmp / Path(page).name).write_text(text, encoding="utf-8")
        except OSError:  # a page the tally expects is not there
            return False
        swap_folder(tmp, target)
        return True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _page_line(tally: PageTally, campaign: str, run_id: str, status: str | None) -> str:
    """The run's line as a group page shows it (the page's tally holds the run's export)."""
    light = PageTally(tally.rules, tally.group_by)
    light.export = tally.export
    return run_line(light, campaign, run_id, status)
