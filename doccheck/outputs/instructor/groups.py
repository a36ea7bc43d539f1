"""One page per group (``<run>/groups/<slug>.html``) when a run is grouped (``--group-by``).

Why pages per group: a term's run is 200 courses; the person who acts on a course opens its
page, small and quick, from the run's entry page. The group pages are written into a
temporary folder renamed over ``groups/`` once all are complete, so a reader never finds
half of them, and a run that is no longer grouped loses its old ones.

A group's rows are read from ``documents.parquet`` in chunks and spilled, as Arrow record
batches (an IPC stream a group), to a file per group beside the pages, then read back one group
at a time while its page is written: memory holds one chunk or one group, never the run (a
100,000-row table held as Arrow was ~50 MB of a term run's peak). Arrow, not JSON lines: the
rows keep their types (as when the rows are held in memory) and a 100,000-row run spent ~1.5 s
encoding and decoding JSON.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from doccheck.outputs.instructor.page import generate_group_page
from doccheck.outputs.instructor.tally import PageTally, group_key

__all__ = ["GROUPS_FOLDER", "write_group_pages"]

GROUPS_FOLDER = "groups"
_DOCUMENTS = "documents.parquet"
#: Rows of ``documents.parquet`` read at a time.
_CHUNK = 2000


def write_group_pages(
    folder: Path,
    tally: PageTally,
    *,
    campaign: str,
    run_id: str | None = None,
    status: str | None = None,
    rows: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
) -> list[Path]:
    """Write every group's page of a grouped run (``rows()``: the rows when held in memory,
    else they are read from the folder's ``documents.parquet``); remove ``groups/`` when
    the run is not grouped. The pages written, in the entry page's order."""
    target = folder / GROUPS_FOLDER
    if not tally.grouped or tally.group_by is None:
        shutil.rmtree(target, ignore_errors=True)
        return []
    tmp = folder / f".{GROUPS_FOLDER}.tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    written = []
    try:
        for group, group_rows in _rows_by_group(folder, tally.group_by, rows, tmp):
            counts = tally.groups[group]
            path = tmp / f"{counts.slug}.html"
            with open(path, "w", encoding="utf-8") as out:
                for piece in generate_group_page(counts, group_rows, tally=tally, campaign=campaign, run_id=run_id,
                                                 status=status):  # fmt: skip
                    out.write(piece)
            written.append(target / path.name)
        _swap(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return written


def _rows_by_group(folder: Path, column: str, rows: Callable[[], Sequence[Mapping[str, Any]]] | None, spill: Path
                   ) -> Iterable[tuple[str, list[Mapping[str, Any]]]]:  # fmt: skip
    """Each group's rows (rejected rows too: the page counts them), one group at a time
    (``rows()`` when held in memory, else spilled to ``spill`` from ``documents.parquet``)."""
    if rows is not None:
        held: dict[str, list[Mapping[str, Any]]] = {}
        for r in rows():
            held.setdefault(group_key(r.get(column)), []).append(r)
        yield from held.items()
        return
    files: dict[str, Path] = {}
    with contextlib.ExitStack() as open_files:
        writers: dict[str, ipc.RecordBatchStreamWriter] = {}
        for batch in pq.ParquetFile(folder / _DOCUMENTS).iter_batches(batch_size=_CHUNK, use_threads=False):
            at = batch.schema.get_field_index(column)
            values = batch.column(at).to_pylist() if at >= 0 else [None] * batch.num_rows
            chunk: dict[str, list[int]] = {}
            for i, value in enumerate(values):
                chunk.setdefault(group_key(value), []).append(i)
            for group, indices in chunk.items():
                if group not in writers:
                    files[group] = spill / f"{len(files)}.arrows"
                    sink = open_files.enter_context(pa.OSFile(str(files[group]), "wb"))
                    writers[group] = open_files.enter_context(ipc.new_stream(sink, batch.schema))
                writers[group].write_batch(batch.take(pa.array(indices, type=pa.int32())))
    for group, path in files.items():
        with pa.memory_map(str(path)) as spilled:
            group_rows = ipc.open_stream(spilled).read_all().to_pylist()
        path.unlink()
        yield group, group_rows


def _swap(new: Path, target: Path) -> None:
    """Put the complete folder ``new`` in the place of ``target`` (the old one removed after)."""
    old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex}")
    if target.exists():
        target.rename(old)
    new.rename(target)
    shutil.rmtree(old, ignore_errors=True)
