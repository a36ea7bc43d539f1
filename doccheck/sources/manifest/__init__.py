"""Read and validate a manifest of documents (CSV, Parquet or JSONL) before anything is sent.

Every row is validated locally, and one bad row never sinks the batch: a row that would
fail at the service, in the ledger or in the reports (or cost money for nothing) becomes a
:class:`Rejection` with a stable machine code and a sentence naming the row, the field and
the reason. Rejected rows cost nothing and are always reported. Only problems with the
manifest as a whole (unreadable file, not UTF-8 CSV, no ``document_id`` column, an
allowlisted metadata column that does not exist) raise :class:`ManifestError`, because they
are configuration errors, not data.

Callers import from here; the modules are private, one per job: a reader per format
(``_csv_reader``, ``_jsonl_reader``, ``_parquet_reader``, chosen by ``_rows``) turns the file into
``(row number, row or RowProblem)`` pairs within the bounds of ``_limits``; ``_validate`` judges each row,
``_files`` each ``path``; ``_stream`` does it one row at a time (:func:`iter_manifest`, duplicate
ids in :class:`CompactIds`). See ``docs/manifest.md`` for the format, the rules and the reject codes.
"""

from __future__ import annotations

from doccheck.errors import ManifestError
from doccheck.sources.manifest._column_names import RESERVED_COLUMNS, canonical_column
from doccheck.sources.manifest._compact_ids import CompactIds
from doccheck.sources.manifest._limits import (
    JSON_BODY_MAX_BYTES,
    JSON_BODY_RESERVE_BYTES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    MAX_METADATA_CHARS,
    MAX_NAME_CHARS,
    MAX_ROW_CHARS,
    MULTIPART_MAX_BYTES,
)
from doccheck.sources.manifest._products import KNOWN_PRODUCTS, parse_products
from doccheck.sources.manifest._read import read_manifest
from doccheck.sources.manifest._rows import read_rows
from doccheck.sources.manifest._stream import iter_manifest, manifest_listing
from doccheck.sources.manifest._types import (
    ManifestDocument,
    ManifestResult,
    RejectCode,
    Rejection,
    RowCursor,
    RowStart,
)

__all__ = [
    "JSON_BODY_MAX_BYTES",
    "JSON_BODY_RESERVE_BYTES",
    "KNOWN_PRODUCTS",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "MAX_METADATA_CHARS",
    "MAX_NAME_CHARS",
    "MAX_ROW_CHARS",
    "MULTIPART_MAX_BYTES",
    "RESERVED_COLUMNS",
    "CompactIds",
    "ManifestDocument",
    "ManifestError",
    "ManifestResult",
    "Rejection",
    "RejectCode",
    "RowCursor",
    "RowStart",
    "canonical_column",
    "iter_manifest",
    "manifest_listing",
    "parse_products",
    "read_rows",
    "read_manifest",
]
