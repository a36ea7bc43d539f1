"""Reading a manifest file into validated documents and rejections (:func:`read_manifest`).

The rows of any format (:func:`read_rows`) are what :mod:`.stream` and the evidence pages read too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from doccheck.errors import ManifestError
from doccheck.sources.manifest._column_names import RESERVED_COLUMNS, canonical_column
from doccheck.sources.manifest._csv_reader import read_csv
from doccheck.sources.manifest._jsonl_reader import iter_jsonl
from doccheck.sources.manifest._parquet_reader import read_parquet
from doccheck.sources.manifest._types import (
    ManifestDocument,
    ManifestResult,
    Rejection,
    Row,
    RowCursor,
    RowProblem,
    RowStart,
)


def read_manifest(
    path: str | os.PathLike[str],
    *,
    default_products: Sequence[str] = ("ai",),
    metadata_columns: Sequence[str] = (),
) -> ManifestResult:
    """Read ``path`` (by extension: .csv, .parquet/.pq, .jsonl/.ndjson) and validate every row.

    ``default_products`` apply to rows whose ``products`` cell is empty. ``metadata_columns``
    is the allowlist of columns sent to the service as metadata (``document_id`` always is).
    Raises :class:`ManifestError` for problems of the whole manifest or configuration.
    """
    from doccheck.sources.manifest._stream import iter_manifest  # the one row-by-row judge; it uses this package

    documents: list[ManifestDocument] = []
    rejections: list[Rejection] = []
    for outcome in iter_manifest(path, default_products=default_products, metadata_columns=metadata_columns):
        if isinstance(outcome, Rejection):
            rejections.append(outcome)
        else:
            documents.append(outcome)
    return ManifestResult(documents=documents, rejections=rejections, source=Path(path))


def _clean_allowlist(metadata_columns: Sequence[str] | str) -> list[str]:
    """Normalise the allowlist (a comma-separated string is accepted for CLI convenience)."""
    if isinstance(metadata_columns, str):
        metadata_columns = metadata_columns.split(",")
    allowlist: list[str] = []
    for raw in metadata_columns:
        name = str(raw).strip()
        if not name or canonical_column(name) == "document_id" or name in allowlist:
            continue
        if canonical_column(name) in RESERVED_COLUMNS:
            raise ManifestError(
                f"column {name!r} cannot be sent as metadata (reserved: "
                f"{', '.join(sorted(RESERVED_COLUMNS - {'document_id'}))})"
            )
        allowlist.append(name)
    return allowlist


def read_rows(
    source: Path,
    *,
    cursor: RowCursor | None = None,
    start: RowStart | None = None,
    wanted: Sequence[str] = (),
) -> tuple[list[str], Iterator[tuple[int, Row | RowProblem]]]:
    """Columns and an iterator of (row number, row or the reader's problem with it).

    ``cursor``/``start`` as the readers take them. ``wanted``: the columns the caller will
    look for (``document_id`` always is); a JSONL scan for its columns stops once all are seen.
    """
    if not source.exists():
        raise ManifestError(f"manifest {source} does not exist")
    if not source.is_file():
        raise ManifestError(f"manifest {source} is not a file")
    ext = source.suffix.lower()
    if ext == ".csv":
        return read_csv(source, cursor=cursor, start=start)
    if ext in (".parquet", ".pq"):
        return read_parquet(source, cursor=cursor, start=start)
    if ext in (".jsonl", ".ndjson"):
        return _jsonl_columns(source, wanted), iter_jsonl(source, cursor=cursor, start=start)
    raise ManifestError(f"manifest {source}: unsupported extension {ext or '(none)'!r}; use .csv, .parquet or .jsonl")


def _jsonl_columns(source: Path, wanted: Sequence[str]) -> list[str]:
    """JSONL has no header: its columns are the keys of its lines, found by a first pass.

    The pass keeps only the keys (memory flat in the file's size, issue 10) and stops as soon
    as ``document_id`` and every ``wanted`` column have been seen, which for an ordinary file
    is its first line; only a manifest that lacks one is scanned to the end (to name what it has).
    """
    needed = {"document_id", *wanted}
    columns: list[str] = []
    seen: set[str] = set()
    for _, row in iter_jsonl(source):
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
