"""Parquet manifests, read in record batches, every cell as the text it was written as.

Batches hold up to 1,024 rows, fewer when the rows are wide (about 64 MiB of uncompressed data
per batch, from the row groups' metadata), so a manifest of long texts is not decoded at once.
A read that stops mid-file keeps its place for the next read of the same file from a later
row (``_resume``), so the batches of a run read in order decode the file once.

Ids are identifiers, not quantities: a ``document_id`` column stored as floating point
cannot tell ``1.50`` from ``1.5`` or ``12`` from ``12.0`` any more (pandas turns an integer
column with gaps into floats this way), so such a file is refused with the fix instead of
sending ids that differ from the spreadsheet. Integers, strings and decimals keep their
written form; ±inf in any cell rejects that row; NaN means "not given", as in pandas.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doccheck.errors import CellProblem, ManifestError
from doccheck.sources.manifest._column_names import canonical_columns
from doccheck.sources.manifest._types import Row, RowCursor, RowProblem, RowStart
from doccheck.sources.manifest._values import cell_text
from doccheck.storage import Entry, UserPath, display, open_input

__all__ = ["read_parquet"]

_BATCH_ROWS = 1024
#: Aim for record batches of about this many uncompressed bytes (long texts → fewer rows per batch).
_BATCH_BYTES = 64 * 1024 * 1024


def read_parquet(
    source: UserPath, *, cursor: RowCursor | None = None, start: RowStart | None = None, entry: Entry | None = None
) -> tuple[list[str], Iterator[tuple[int, Row | RowProblem]]]:
    """Columns and a row iterator over the file's record batches.

    Parquet has no byte offsets (``cursor`` stays None). ``start`` begins at its ``row``: the
    row groups before it are not read, and the rows before it in its group are decoded by
    Arrow but never turned into Python values. ``entry``: a store's file's listing entry (its
    size and identity); the file is read through ``doccheck.storage``, its footer and the row
    groups read in ranged reads.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # a local file by its path (Arrow's own reads); a store's as a file object of the seam
        parquet = pq.ParquetFile(source if isinstance(source, Path) else open_input(source, size=_size(entry)))
        schema = parquet.schema_arrow
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several unrelated types for corrupt files
        raise ManifestError(f"manifest {source} is not a readable Parquet file: {_short(exc)}") from None
    written = [str(name) for name in schema.names]
    columns = canonical_columns(source, written)
    for name, column in zip(written, columns, strict=True):
        if column == "document_id" and pa.types.is_floating(schema.field(name).type):
            raise ManifestError(
                f"manifest {source}: column {name!r} is stored as floating point ({schema.field(name).type}), "
                "which cannot keep ids as written ('1.50' vs '1.5', '0012', '12' vs '12.0'); "
                "store it as text (pandas: df['document_id'] = df['document_id'].astype('string') before to_parquet)"
            )

    if cursor is not None:
        cursor.offset = cursor.line = None
    identity = _identity(source, entry)

    def rows() -> Iterator[tuple[int, Row | RowProblem]]:
        skip = start.row - 1 if start is not None else 0
        index = skip
        groups, first = _groups_from(parquet, skip)
        place = _resume(identity, first, skip)
        try:
            if place is None:
                if not groups:
                    return
                place = _Place(parquet.iter_batches(batch_size=_batch_rows(parquet), row_groups=groups), None, first)
            while True:
                batch = place.batch
                if batch is None or place.first + batch.num_rows <= index:
                    if batch is not None:
                        place.first += batch.num_rows
                    place.batch = batch = next(place.batches, None)
                    if batch is None:
                        place = None  # read to the end: nothing to keep
                        return
                    continue
                for record in batch.slice(index - place.first).to_pylist():
                    index += 1
                    yield index, _row(list(record.values()), columns)
        except ManifestError:
            raise
        except Exception as exc:  # noqa: BLE001 - a corrupt page further on
            place = None
            raise ManifestError(
                f"manifest {source} is not a readable Parquet file after row {index}: {_short(exc)}"
            ) from None
        finally:
            if place is not None and identity is not None:
                _keep(identity, place)

    return columns, rows()


@dataclass
class _Place:
    """Where a partly read Parquet file stands: the rest of its record batches, the batch in
    hand (holding the last row yielded) and the 0-based index of that batch's first row."""

    batches: Iterator[Any]
    batch: Any
    first: int


#: Partly read files by identity (path, size, mtime, inode; a store's: its URL, ETag and size), most recent last.
_PLACES: OrderedDict[tuple[str, str], _Place] = OrderedDict()
_PLACES_LOCK = threading.Lock()
#: Files whose place is kept at once (each holds one record batch, up to ~64 MiB).
_PLACES_KEPT = 2


def _size(entry: Entry | None) -> int | None:
    return entry.size if entry is not None else None


def _identity(source: UserPath, entry: Entry | None) -> tuple[str, str] | None:
    if not isinstance(source, Path):
        return (display(source), entry.identity) if entry is not None else None
    try:
        st = source.stat()
    except OSError:
        return None
    return (str(source.resolve()), f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")


def _resume(identity: tuple[str, str] | None, group_first: int, skip: int) -> _Place | None:
    """The place a previous read of this same file stopped at, if its batch in hand starts
    in the row group of row index ``skip`` (which starts at ``group_first``) and at or before
    ``skip`` (taken: one reader at a time). A place in an earlier group is left: reading on
    from it would decode whole groups that a fresh read skips.

    Why: a Parquet row group cannot be entered in the middle; Arrow decodes it from its first
    row. Batches are read in order, so without this every batch of a manifest written as one
    big row group (pandas' default up to 1 Mi rows) decoded all the rows before it: quadratic
    in the manifest's size (issue 10, docs/benchmarks.md). A file changed since (size, mtime
    or inode) is read afresh, so an edited manifest is still seen as edited.
    """
    if identity is None:
        return None
    with _PLACES_LOCK:
        place = _PLACES.get(identity)
        if place is None or not group_first <= place.first <= skip:
            return None
        del _PLACES[identity]
        return place


def _keep(identity: tuple[str, str], place: _Place) -> None:
    with _PLACES_LOCK:
        _PLACES[identity] = place
        _PLACES.move_to_end(identity)
        while len(_PLACES) > _PLACES_KEPT:
            _PLACES.popitem(last=False)


def _groups_from(parquet: object, skip: int) -> tuple[list[int], int]:
    """The row groups from the one holding row index ``skip`` (0-based) on, and that group's first index."""
    meta = parquet.metadata  # type: ignore[attr-defined]
    first = 0
    for i in range(meta.num_row_groups):
        rows = meta.row_group(i).num_rows
        if first + rows > skip:
            return list(range(i, meta.num_row_groups)), first
        first += rows
    return [], first


def _batch_rows(parquet: object) -> int:
    """Rows per batch so that a batch of the widest row group stays near ``_BATCH_BYTES``."""
    meta = parquet.metadata  # type: ignore[attr-defined]
    widest = 0.0
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        if group.num_rows:
            widest = max(widest, group.total_byte_size / group.num_rows)
    if widest <= 0:
        return _BATCH_ROWS
    return max(1, min(_BATCH_ROWS, int(_BATCH_BYTES // widest)))


def _row(values: list[object], columns: list[str]) -> Row | RowProblem:
    row: Row = {}
    for column, value in zip(columns, values, strict=False):
        try:
            row[column] = cell_text(column, value)
        except CellProblem as exc:
            raw_id = row.get("document_id")
            return RowProblem(exc.field, exc.code, exc.why, document_id=raw_id)
    return row


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
