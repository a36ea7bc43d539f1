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

from doccheck.errors import ManifestError
from doccheck.sources.manifest._read import read_manifest, read_rows
from doccheck.sources.manifest.columns import RESERVED_COLUMNS
from doccheck.sources.manifest.limits import MAX_FILE_BYTES, MULTIPART_MAX_BYTES
from doccheck.sources.manifest.products import KNOWN_PRODUCTS, parse_products
from doccheck.sources.manifest.types import ManifestDocument, ManifestResult, RejectCode, Rejection

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
    "read_rows",
    "read_manifest",
]
