"""Read and validate a manifest of documents (CSV, Parquet or JSONL) before anything is sent.

Every row is validated locally, and one bad row never sinks the batch: a row that would
fail at the service, in the ledger or in the reports (or cost money for nothing) becomes a
:class:`Rejection` with a stable machine code and a sentence naming the row, the field and
the reason. Rejected rows cost nothing and are always reported. Only problems with the
manifest as a whole (unreadable file, not UTF-8 CSV, no ``document_id`` column, an
allowlisted metadata column that does not exist) raise :class:`ManifestError`, because they
are configuration errors, not data.

The package has one module per job: a reader per format (``csv_reader``, ``jsonl_reader``,
``parquet_reader``) turns the file into ``(row number, row or RowProblem)`` pairs within the
bounds of ``limits``; ``validate`` judges each row, ``files`` each ``path``. See
``docs/manifest.md`` for the format, the rules and the reject codes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from doccheck.errors import ManifestError
from doccheck.sources.manifest.columns import RESERVED_COLUMNS, canonical_column
from doccheck.sources.manifest.csv_reader import read_csv
from doccheck.sources.manifest.jsonl_reader import iter_jsonl
from doccheck.sources.manifest.limits import MAX_FILE_BYTES, MULTIPART_MAX_BYTES
from doccheck.sources.manifest.parquet_reader import read_parquet
from doccheck.sources.manifest.products import KNOWN_PRODUCTS, parse_products
from doccheck.sources.manifest.types import (
    ManifestDocument,
    ManifestResult,
    RejectCode,
    Rejection,
    Row,
    RowCursor,
    RowProblem,
    RowStart,
)

__all__ = [
    "KNOWN_PRODUCTS",
    "MAX_FILE_BYTES",
    "MULTIPART_MAX_BYTES",
    "RESERVED_COLUMNS",
    "ManifestDocument",
    "ManifestError",
    "ManifestResult",
    "Rejection",
    "RejectCode",
    "parse_products",
    "read_manifest",
]


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
    from doccheck.sources.manifest.stream import iter_manifest  # the one row-by-row judge; it uses this package

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


def _read_rows(
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
