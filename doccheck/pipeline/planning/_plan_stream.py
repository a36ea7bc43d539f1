"""Plan a manifest as a stream: per-row planned documents out, only totals and rejections kept.

Why: a :class:`~doccheck.pipeline.planning._plan.Plan` holds every document with its text, so planning a
term (100,000 rows) grew with the manifest (issue 10). :func:`iter_planned` yields each
:class:`PlannedDocument` (same mode, Idempotency-Key and cost as ``plan_documents``) for the
caller to use and drop, while a :class:`PlanTally` keeps what a summary needs: counts per
mode, words, estimated cost and the rejections (rows already refused, reported in full).
Memory is the reader's working set plus ~12 bytes per row for duplicate ids.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from doccheck.domain import sent_as
from doccheck.errors import JsonRejected
from doccheck.guards import bounded_json
from doccheck.pipeline.planning._plan import (
    MODES,
    PlannedDocument,
    plan_document,
    run_defaults,
)
from doccheck.sources.manifest import (
    MAX_DEPTH,
    MAX_LINE_BYTES,
    MAX_ROW_CHARS,
    ManifestDocument,
    ManifestError,
    Rejection,
    canonical_column,
    iter_manifest,
)
from doccheck.storage import Entry, Listing, UserPath, as_storage_error, child, file_name, open_input, resolve

__all__ = ["PlanTally", "file_paths", "iter_planned", "listed_files", "plan_one", "resolve_campaign"]


def resolve_campaign(manifest: str | os.PathLike[str] | UserPath, campaign: str | None) -> str:
    """The campaign as ``plan_documents`` names it: the given one, else the manifest's stem
    (``course-a`` for ``s3://term/course-a.csv`` as for ``course-a.csv``)."""
    name = (campaign if campaign is not None else resolve(manifest).stem).strip()
    if not name:
        raise ManifestError("campaign must not be empty")
    return name


def plan_one(doc: ManifestDocument, campaign: str) -> PlannedDocument:
    """One valid document planned exactly as :func:`doccheck.pipeline.planning._plan.plan_documents` does."""
    return plan_document(doc, campaign)


@dataclass
class PlanTally:
    """What is left of a plan once its documents have streamed by (the summary's figures)."""

    campaign: str
    manifest: UserPath
    documents: int = 0
    products: int = 0  # product checks requested over the documents (progress totals)
    modes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    as_text: int = 0  # files planned as their text (the service profile does not take their type)
    misnamed: int = 0  # files whose name says another type than their bytes (read as what they are)
    words: int = 0
    unknown_words: int = 0
    cost_cents: int = 0
    rejections: list[Rejection] = field(default_factory=list)

    def add(self, doc: PlannedDocument) -> None:
        """Count one planned document (its text is not kept)."""
        self.documents += 1
        self.products += len(doc.products)
        self.modes[doc.mode] += 1
        self.as_text += sent_as(doc.idempotency_key) == "text"
        self.misnamed += doc.misnamed
        self.words += doc.words or 0
        self.unknown_words += doc.words is None
        self.cost_cents += doc.estimated_cost_cents

    def counts_by_mode(self) -> dict[str, int]:
        """Documents per mode, every mode present, plus ``rejected`` (as ``Plan.counts_by_mode``)."""
        return {**self.modes, "rejected": len(self.rejections)}

    def total_words(self) -> int:
        """Known words of the planned documents."""
        return self.words

    def estimated_cost_cents(self) -> int:
        """Expected total charge of the planned documents."""
        return self.cost_cents


def iter_planned(
    manifest: str | os.PathLike[str],
    tally: PlanTally,
    *,
    products: str | Sequence[str] | None = None,
    metadata_columns: str | Sequence[str] = (),
    listing: Listing | None = None,
) -> Iterator[PlannedDocument]:
    """Every valid row of ``manifest`` planned, in row order; rejections and counts go to ``tally``.

    Arguments as :func:`doccheck.pipeline.planning._plan.load_plan`; ``listing``: the manifest's
    folder's, when the caller has one already (else one is made). Configuration errors raise
    :class:`ManifestError` on the first ``next()``.
    """
    defaults, allowlist = run_defaults(products, metadata_columns)
    for outcome in iter_manifest(manifest, default_products=defaults, metadata_columns=allowlist, listing=listing):
        if isinstance(outcome, Rejection):
            tally.rejections.append(outcome)
            continue
        planned = plan_one(outcome, tally.campaign)
        tally.add(planned)
        yield planned


def file_paths(manifest: str | os.PathLike[str], *, limit_bytes: int) -> Iterator[Path]:
    """The local files a manifest's ``path`` cells name that its reader will extract, for
    ``doccheck.extract.cache.prefetch`` to extract beforehand on every core.

    Best effort and read-only: a cell that is odd (absolute, outside the manifest's folder,
    not a regular supported file, larger than ``limit_bytes``), or a file that cannot be parsed
    this simply, is left out; the reader itself judges every row and reports it. No text is
    kept. CSV (UTF-8), JSONL and Parquet. A manifest on a store names none (:func:`listed_files`).
    """
    from doccheck.extract import SUPPORTED_TYPES, extension_of

    source = resolve(manifest)
    if not isinstance(source, Path):
        return
    root = source.parent.resolve()
    for raw in _path_cells(source):
        cell = raw.strip()
        if not cell or "\x00" in cell or Path(cell).is_absolute():
            continue
        try:
            path = (root / cell).resolve()
            if not path.is_relative_to(root) or extension_of(path.name) not in SUPPORTED_TYPES:
                continue
            stat = path.stat()
        except (OSError, ValueError, RuntimeError):
            continue
        if path.is_file() and 0 < stat.st_size <= limit_bytes:
            yield path


def listed_files(
    manifest: str | os.PathLike[str], listing: Listing, *, limit_bytes: int
) -> Iterator[tuple[UserPath, Entry]]:
    """The files on a store a manifest's ``path`` cells name that its reader will read whole, with
    their listing entries, for ``doccheck.extract.cache.prefetch_listed`` to read ahead many at a
    time (the store's latency overlapped). As :func:`file_paths`, best effort: a cell refused
    (outside the prefix, another bucket or scheme), not listed, of a type not read, empty or over
    ``limit_bytes`` is left to the reader, which reports it; nothing is fetched for it here. A
    local manifest names none (:func:`file_paths`)."""
    from doccheck.extract.cache import read_ahead_of

    source = resolve(manifest)
    if isinstance(source, Path):
        return
    root = source.parent
    for raw in _path_cells(source):
        cell = raw.strip()
        if not cell or "\x00" in cell:
            continue
        try:
            path = child(root, cell)
        except (OSError, ValueError):  # OutsideLocation among them
            continue
        entry = listing.entry(path)
        if entry is not None and read_ahead_of(file_name(path), entry.size, limit_bytes):
            yield path, entry


def _path_cells(source: UserPath) -> Iterator[str]:
    """Raw ``path`` cells of a manifest; stops quietly at anything unusual.

    The manifest is a student-facing file, hostile until proven otherwise, and this runs
    before its reader has judged a row: a line or a CSV row longer than the reader's limits
    stops it, and a JSON line is parsed with the bounded parser (depth, size, numbers)."""
    suffix = source.suffix.lower()
    try:
        with as_storage_error(source), open_input(source) as raw:
            if suffix == ".parquet":
                yield from _parquet_path_cells(raw)
                return
            jsonl = suffix in (".jsonl", ".ndjson")
            handle = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=None if jsonl else "")
            yield from (_jsonl_path_cells(handle) if jsonl else _csv_path_cells(handle))
    except (OSError, ValueError, csv.Error, ImportError):
        return


def _parquet_path_cells(raw: IO[bytes]) -> Iterator[str]:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(raw)
    if "path" not in [canonical_column(n) for n in parquet.schema_arrow.names]:
        return
    for batch in parquet.iter_batches(columns=["path"], batch_size=4096):
        yield from (str(v) for v in batch.column(0).to_pylist() if v is not None)


def _jsonl_path_cells(handle: IO[str]) -> Iterator[str]:
    while line := handle.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES:
            return
        try:
            row = bounded_json.loads(line, max_bytes=MAX_LINE_BYTES, max_depth=MAX_DEPTH) if line.strip() else {}
        except JsonRejected:
            continue  # the reader rejects this row itself, naming it
        value = row.get("path") if isinstance(row, dict) else None
        if isinstance(value, str):
            yield value


def _csv_path_cells(handle: IO[str]) -> Iterator[str]:
    lines = _BoundedLines(handle)
    rows = csv.reader(lines)
    header = [canonical_column(c) for c in next(rows, [])]
    if "path" not in header:
        return
    at = header.index("path")
    for cells in rows:
        if lines.ended:  # the row cut at the limit is not a row
            return
        lines.chars = 0
        if len(cells) > at:
            yield cells[at]


class _BoundedLines:
    """A CSV file's lines for ``csv.reader`` that end the file once one row's lines pass
    the reader's :data:`MAX_ROW_CHARS` (an unclosed quote would otherwise read the whole file)."""

    def __init__(self, handle: IO[str]) -> None:
        self.handle = handle
        self.chars = 0  # characters of the current row so far
        self.ended = False  # for good: csv.reader would otherwise ask again after the cut row

    def __iter__(self) -> _BoundedLines:
        return self

    def __next__(self) -> str:
        line = "" if self.ended else self.handle.readline(MAX_ROW_CHARS + 1)
        self.chars += len(line)
        if not line or self.chars > MAX_ROW_CHARS:
            self.ended = True
            raise StopIteration
        return line
