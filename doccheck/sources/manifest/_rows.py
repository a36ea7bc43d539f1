"""The rows of a manifest file of any format (:func:`read_rows`), before any row is judged.

What :mod:`._stream` judges and the evidence pages read raw: the reader is chosen by extension, and
JSONL's columns come from a first pass over its keys. A manifest on a store (``s3://...``) is
asked of its store once (one HEAD), and its size handed to the reader, whose one open then needs
no other request than its reads.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from doccheck.errors import ManifestError, StorageError
from doccheck.sources.manifest._csv_reader import read_csv
from doccheck.sources.manifest._jsonl_reader import iter_jsonl
from doccheck.sources.manifest._parquet_reader import read_parquet
from doccheck.sources.manifest._types import Row, RowCursor, RowProblem, RowStart
from doccheck.storage import Entry, UserPath, as_storage_error, describe

__all__ = ["read_rows"]


def read_rows(
    source: UserPath,
    *,
    cursor: RowCursor | None = None,
    start: RowStart | None = None,
    wanted: Sequence[str] = (),
) -> tuple[list[str], Iterator[tuple[int, Row | RowProblem]]]:
    """Columns and an iterator of (row number, row or the reader's problem with it).

    ``cursor``/``start`` as the readers take them. ``wanted``: the columns the caller will
    look for (``document_id`` always is); a JSONL scan for its columns stops once all are seen.
    """
    entry = _the_file(source)
    ext = source.suffix.lower()
    if ext == ".csv":
        return read_csv(source, cursor=cursor, start=start, entry=entry)
    if ext in (".parquet", ".pq"):
        return read_parquet(source, cursor=cursor, start=start, entry=entry)
    if ext in (".jsonl", ".ndjson"):
        return _jsonl_columns(source, wanted, entry), iter_jsonl(source, cursor=cursor, start=start, entry=entry)
    raise ManifestError(f"manifest {source}: unsupported extension {ext or '(none)'!r}; use .csv, .parquet or .jsonl")


def _the_file(source: UserPath) -> Entry | None:
    """Refuse a manifest that is not a file; a store's manifest's entry (None for a local one)."""
    if isinstance(source, Path):
        if not source.exists():
            raise ManifestError(f"manifest {source} does not exist")
        if not source.is_file():
            raise ManifestError(f"manifest {source} is not a file")
        return None
    try:
        with as_storage_error(source):
            entry = describe(source)
    except StorageError as exc:
        raise ManifestError(f"manifest {exc}") from None
    except OSError as exc:
        raise ManifestError(f"manifest {source} cannot be read: {exc.strerror or type(exc).__name__}") from None
    if entry is None:
        raise ManifestError(f"manifest {source} does not exist")
    return entry


def _jsonl_columns(source: UserPath, wanted: Sequence[str], entry: Entry | None) -> list[str]:
    """JSONL has no header: its columns are the keys of its lines, found by a first pass.

    The pass keeps only the keys (memory flat in the file's size, issue 10) and stops as soon
    as ``document_id`` and every ``wanted`` column have been seen, which for an ordinary file
    is its first line; only a manifest that lacks one is scanned to the end (to name what it has).
    """
    needed = {"document_id", *wanted}
    columns: list[str] = []
    seen: set[str] = set()
    for _, row in iter_jsonl(source, entry=entry):
        if isinstance(row, dict):
            for key in row:
                if key not in seen:
                    seen.add(key)
                    columns.append(key)
        elif "document_id" not in seen:
            # A line the reader refused is judged as a row of its own, not as a missing column.
            seen.add("document_id")
            columns.insert(0, "document_id")
        if needed <= seen:
            break
    return columns
