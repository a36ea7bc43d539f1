"""Read and validate a manifest one row at a time: what :func:`read_manifest` does, without the lists.

Why: ``read_manifest`` returns every document with its text, which is what made a
100,000-row term cost 1.75 GB to plan (issue 10). :func:`iter_manifest` yields each row's
:class:`ManifestDocument` or :class:`Rejection` as soon as it is judged, with the same
whole-manifest checks up front (``document_id`` column, allowlisted columns) and duplicate
ids tracked in :class:`~doccheck.sources.manifest._compact_ids.CompactIds` (~12 bytes per row), so a
caller that keeps only what it needs (counts, keys, hashes) plans in memory that does not
grow with the documents' texts. CSV and JSONL are read row by row, Parquet by record batch
(JSONL's columns come from a first pass over its keys that stops once the needed ones are seen).
A :class:`RowCursor` tells the caller where each row begins and a :class:`RowStart` reads from a
given row on: how a real run re-reads one batch at a time (:mod:`doccheck.pipeline.planning._batches`).

The manifest may be a URL (``s3://bucket/course-a/manifest.csv``, issue 48): it is resolved here
(``doccheck.storage.resolve``), its rows' files are confined to its prefix and looked up in one
listing of it (:func:`manifest_listing`), which a run shares among its reads of the manifest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from doccheck.errors import ManifestError, StorageError
from doccheck.sources.manifest._column_names import RESERVED_COLUMNS, canonical_column, header_hint
from doccheck.sources.manifest._compact_ids import CompactIds
from doccheck.sources.manifest._products import parse_products
from doccheck.sources.manifest._rows import read_rows
from doccheck.sources.manifest._types import ManifestDocument, Rejection, RowCursor, RowStart
from doccheck.sources.manifest._validate import validate_row
from doccheck.storage import Listing, UserPath, resolve

__all__ = ["iter_manifest", "manifest_listing"]


def manifest_listing(path: str | os.PathLike[str]) -> Listing:
    """The listing of the folder or prefix the manifest at ``path`` names its files under: on a store
    one LIST of the prefix when first asked (then every row's file is answered from it), on the
    disk a stat of each file when asked. Made once a run and handed to :func:`iter_manifest`."""
    return Listing(_folder(resolve(path)))


def _folder(source: UserPath) -> UserPath:
    """Where the manifest's rows' paths start: its folder (resolved, links followed) or its prefix."""
    return source.resolve().parent if isinstance(source, Path) else source.parent


def iter_manifest(
    path: str | os.PathLike[str],
    *,
    default_products: Sequence[str] = ("ai",),
    metadata_columns: Sequence[str] = (),
    cursor: RowCursor | None = None,
    start: RowStart | None = None,
    listing: Listing | None = None,
) -> Iterator[ManifestDocument | Rejection]:
    """Each row of ``path`` (a path or a URL) judged, in row order (same rules and reasons as
    ``read_manifest``).

    Whole-manifest problems raise :class:`ManifestError` before the first row is yielded.
    ``cursor``: set to where each yielded row begins, before it is yielded. ``start``: judge
    from that row on (duplicate ids are then only found among the rows read). ``listing``: the
    manifest's :func:`manifest_listing`, when a run shares one (else one is made for this read).
    """
    try:
        source = resolve(path)
    except StorageError as exc:  # a URL with a credential, an unknown scheme, a missing extra
        raise ManifestError(f"manifest {exc}") from None
    try:
        defaults = parse_products(list(default_products), default=())
    except ValueError as exc:
        raise ManifestError(f"invalid default products: {exc}") from None
    allowlist = _clean_allowlist(metadata_columns)
    columns, rows = read_rows(source, cursor=cursor, start=start, wanted=allowlist)
    if "document_id" not in columns:
        raise ManifestError(
            f"manifest {source}: required column 'document_id' is missing "
            f"(columns found: {', '.join(repr(c) for c in columns[:20]) or 'none'})" + header_hint(columns)
        )
    unknown = [c for c in allowlist if c not in columns]
    if unknown:
        raise ManifestError(
            f"manifest {source}: metadata column(s) {', '.join(repr(c) for c in unknown)} "
            f"not found (columns found: {', '.join(repr(c) for c in columns[:20])})"
        )
    base = _folder(source)
    return _judged(rows, base, defaults, allowlist, listing if listing is not None else Listing(base))


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


def _judged(
    rows: Iterator[tuple[int, object]],
    base_dir: UserPath,
    defaults: tuple[str, ...],
    allowlist: list[str],
    listing: Listing,
) -> Iterator[ManifestDocument | Rejection]:
    seen = CompactIds()
    for row_number, row in rows:
        yield validate_row(row_number, row, base_dir, defaults, allowlist, seen, listing)  # type: ignore[arg-type]
