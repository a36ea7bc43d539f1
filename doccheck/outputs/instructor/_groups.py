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
encoding and decoding JSON. The pages are written in this process: a large run's were written
by spawned worker processes, one a core, and each re-imported the command (its ``__main__``) and
the reports' modules, ~160 MB of RSS apiece beside the run's own, so a 100,000-document term's
process tree peaked at 603 MB for a few seconds of the pages' time (issue 49).
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from doccheck.outputs.instructor._page import generate_group_page
from doccheck.outputs.instructor._tally import GroupCounts, PageTally, group_key

__all__ = ["GROUPS_FOLDER", "swap_folder", "write_group_pages"]

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
    else they are read from the folder's ``documents.parquet``); remove ``groups/`` when the
    run is not grouped. The pages written, in the entry page's order."""
    target = folder / GROUPS_FOLDER
    if not tally.grouped or tally.group_by is None:
        shutil.rmtree(target, ignore_errors=True)
        return []
    tmp = folder / f".{GROUPS_FOLDER}.tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    job = _PageJob(_page_tally(tally), campaign, run_id, status, tmp)
    try:
        if rows is not None:
            held: dict[str, list[Mapping[str, Any]]] = {}
            for r in rows():
                held.setdefault(group_key(r.get(tally.group_by)), []).append(r)
            names = [job.write(tally.groups[group], group_rows) for group, group_rows in held.items()]
        else:
            spilled = _spill_by_group(folder / _DOCUMENTS, tally.group_by, tmp)
            names = [job.write_spilled(tally.groups[group], path) for group, path in spilled.items()]
        swap_folder(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [target / name for name in names]


@dataclass(frozen=True)
class _PageJob:
    """What writing one group's page needs besides its rows."""

    tally: PageTally  # the run's rules and columns only (see _page_tally)
    campaign: str
    run_id: str | None
    status: str | None
    folder: Path

    def write(self, counts: GroupCounts, rows: Sequence[Mapping[str, Any]]) -> str:
        """Write ``counts``' page with its ``rows``; its file name."""
        path = self.folder / f"{counts.slug}.html"
        with open(path, "w", encoding="utf-8") as out:
            for piece in generate_group_page(counts, rows, tally=self.tally, campaign=self.campaign,
                                             run_id=self.run_id, status=self.status):  # fmt: skip
                out.write(piece)
        return path.name

    def write_spilled(self, counts: GroupCounts, spilled: Path) -> str:
        """Write ``counts``' page from its spilled rows (then removed); its file name."""
        with pa.memory_map(str(spilled)) as source:
            rows = ipc.open_stream(source).read_all().to_pylist()
        spilled.unlink()
        return self.write(counts, rows)


def _page_tally(tally: PageTally) -> PageTally:
    """What a group's page reads of the run's tally (its rules, columns and export), without
    the run's per-document contents (scores, students, concern rows)."""
    light = PageTally(tally.rules, tally.group_by)
    light.meta, light.lms, light.export = list(tally.meta), tally.lms, tally.export
    return light


def _spill_by_group(documents: Path, column: str, spill: Path) -> dict[str, Path]:
    """Every row of ``documents`` (rejected rows too: the page counts them) appended to its
    group's Arrow stream in ``spill``, read in chunks; the streams by group, in the order the
    groups first appear. Each chunk is reordered by group once and written as one slice a group,
    through a buffered file: a 100,000-row run in 200 groups was 10,000 ``take`` calls and a
    write system call per column of each (2.2 s; issue 28)."""
    files: dict[str, Path] = {}
    with contextlib.ExitStack() as open_files:
        writers: dict[str, ipc.RecordBatchStreamWriter] = {}
        for batch in pq.ParquetFile(documents).iter_batches(batch_size=_CHUNK, use_threads=False):
            ordered, groups = _by_group(batch, column)
            for group, start, length in groups:
                if group not in writers:
                    files[group] = spill / f"{len(files)}.arrows"
                    sink = open_files.enter_context(pa.output_stream(str(files[group]), buffer_size=_SPILL_BUFFER))
                    writers[group] = open_files.enter_context(ipc.new_stream(sink, batch.schema))
                writers[group].write_batch(ordered.slice(start, length))
    return files


#: Bytes buffered per group's spill file (200 groups: 6.4 MB at most).
_SPILL_BUFFER = 32 * 1024


def _by_group(batch: pa.RecordBatch, column: str) -> tuple[pa.RecordBatch, list[tuple[str, int, int]]]:
    """``batch`` with its rows ordered by group (file order kept within a group) and each group's
    (key, offset, length) in it, the groups in the order they first appear in ``batch``."""
    at = batch.schema.get_field_index(column)
    if at < 0 or batch.num_rows == 0:
        return batch, ([(group_key(None), 0, batch.num_rows)] if batch.num_rows else [])
    encoded = pc.dictionary_encode(batch.column(at))
    key_ids: dict[str, int] = {}
    # A value's group: several values can share one (None and "", True and "true").
    code_key = [key_ids.setdefault(group_key(v), len(key_ids)) for v in [*encoded.dictionary.to_pylist(), None]]
    # Through a list: Arrow's to_numpy imports pandas (its C++ converter does), which a command
    # keeps out (doccheck.commands._pyarrow_without_pandas); a chunk's codes are ints, a few ms.
    codes = np.asarray(encoded.indices.fill_null(len(encoded.dictionary)).to_pylist(), dtype=np.int64)
    row_keys = np.asarray(code_key, dtype=np.int64)[codes]
    order = np.argsort(row_keys, kind="stable")
    counts = np.bincount(row_keys, minlength=len(key_ids))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    names = list(key_ids)
    present = [k for k in range(len(names)) if counts[k]]
    present.sort(key=lambda k: int(order[starts[k]]))  # first appearance of each group
    ordered = batch.take(pa.array(order, type=pa.int64()))
    return ordered, [(names[k], int(starts[k]), int(counts[k])) for k in present]


def swap_folder(new: Path, target: Path) -> None:
    """Put the complete folder ``new`` in the place of ``target`` (the old one removed after)."""
    old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex}")
    if target.exists():
        target.rename(old)
    new.rename(target)
    shutil.rmtree(old, ignore_errors=True)
