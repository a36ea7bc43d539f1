"""Reading a manifest file into validated documents and rejections (:func:`read_manifest`): the rows
judged one by one (:mod:`._stream`), kept in two lists.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from doccheck.sources.manifest._stream import iter_manifest
from doccheck.sources.manifest._types import ManifestDocument, ManifestResult, Rejection
from doccheck.storage import resolve


def read_manifest(
    path: str | os.PathLike[str],
    *,
    default_products: Sequence[str] = ("ai",),
    metadata_columns: Sequence[str] = (),
) -> ManifestResult:
    """Read ``path`` (a path or a URL; by extension: .csv, .parquet/.pq, .jsonl/.ndjson) and validate every row.

    ``default_products`` apply to rows whose ``products`` cell is empty. ``metadata_columns``
    is the allowlist of columns sent to the service as metadata (``document_id`` always is).
    Raises :class:`ManifestError` for problems of the whole manifest or configuration.
    """
    documents: list[ManifestDocument] = []
    rejections: list[Rejection] = []
    for outcome in iter_manifest(path, default_products=default_products, metadata_columns=metadata_columns):
        if isinstance(outcome, Rejection):
            rejections.append(outcome)
        else:
            documents.append(outcome)
    return ManifestResult(documents=documents, rejections=rejections, source=resolve(path))
