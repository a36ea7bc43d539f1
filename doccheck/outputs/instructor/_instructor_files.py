"""Write a run's instructor files: ``report.html``, ``documents.parquet``, ``documents.csv``.

Called after the Parquet reports are written (``doccheck.outputs._parquet_reports.write_reports``) and the
files downloaded (``doccheck.outputs._downloads``): it reads the run folder's reports back, so the
same code serves ``bulk_check``, ``collect_results`` and the notebook. The three files go in
the run folder and a copy in ``latest/``, where the page's file links point back into the
run folder (``../<run>/files/...``), since the files are not copied. A staged run folder
(``write_reports(staged=True)``: ``.<run>.partial/``) is renamed and ``latest/`` swapped only
after every file is written (:mod:`doccheck.outputs._report_folders`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from doccheck.ledger import Disposition
from doccheck.outputs._calibration import AiRules, calibrate, write_calibration
from doccheck.outputs._downloads import FILE_KINDS, files_by_document
from doccheck.outputs._parquet_reports import META_PREFIX, REPORT_FILES
from doccheck.outputs._report_folders import begin_latest, discarding, final_dir, publish, work_dir
from doccheck.outputs.instructor._documents_table import (
    DOCUMENTS_CSV,
    DOCUMENTS_PARQUET,
    DocumentsBuilder,
    TopSources,
    apply_dispositions,
    checks_to_documents,
    documents_schema,
    documents_table,
)
from doccheck.outputs.instructor._evidence import PairTexts, evidence_section
from doccheck.outputs.instructor._groups import write_group_pages
from doccheck.outputs.instructor._page import generate_report
from doccheck.outputs.instructor._reused_files import reuse_instructor_files
from doccheck.outputs.instructor._spreadsheet import CsvChunks
from doccheck.outputs.instructor._tally import PageTally, group_column
from doccheck.storage import UserPath, resolve

__all__ = [
    "CALIBRATION_JSON",
    "COHORT_MATCHES_FILE",
    "DOCUMENTS_CSV",
    "DOCUMENTS_PARQUET",
    "REPORT_HTML",
    "InstructorPaths",
    "names_from_ledger",
    "read_run_tables",
    "write_instructor_files",
]

REPORT_HTML = "report.html"
#: The expected false flags (doccheck.outputs._calibration), the page's numbers for data teams.
CALIBRATION_JSON = "calibration.json"
#: Written by the cohort comparison when it ran (optional input).
COHORT_MATCHES_FILE = "cohort_matches.parquet"


@dataclass(frozen=True)
class InstructorPaths:
    """The files written in the run folder (the same names are in ``latest/`` when given):
    local paths, or locations on a store."""

    report_html: UserPath
    documents_parquet: UserPath
    documents_csv: UserPath
    latest_report_html: UserPath | None = None


def read_run_tables(run_dir: str | Path, columns: Sequence[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The run folder's Parquet reports as row dicts (a missing file is an empty table);
    only the ``columns`` each file has when given."""
    folder = Path(run_dir)
    rows: dict[str, list[dict[str, Any]]] = {}
    for name, filename in REPORT_FILES.items():
        path = folder / filename
        if not path.is_file():
            rows[name] = []
            continue
        wanted = None if columns is None else [c for c in columns if c in pq.read_schema(path).names]
        rows[name] = pq.ParquetFile(path).read(columns=wanted).to_pylist()
    return rows


def _read_cohort(run_dir: Path) -> list[dict[str, Any]] | None:
    path = run_dir / COHORT_MATCHES_FILE
    return pq.ParquetFile(path).read().to_pylist() if path.is_file() else None


def names_from_ledger(ledger: Any, run_id: str, document_ids: Sequence[str] | None = None) -> dict[str, str]:
    """document_id → name (the manifest's, or the file name) of a run's accepted documents
    (only of ``document_ids`` when given: one chunk of the wide table)."""
    from doccheck.ledger import document_names

    with ledger.session() as s:
        return document_names(s, run_id, document_ids)


def write_instructor_files(
    run_dir: str | UserPath,
    latest_dir: str | UserPath | None = None,
    *,
    campaign: str,
    run_id: str | None = None,
    status: str | None = None,
    names: Mapping[str, str] | None = None,
    tables: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    cohort_matches: Sequence[Mapping[str, Any]] | None = None,
    download_failures: Sequence[Mapping[str, Any]] = (),
    spent_cents: int | None = None,
    names_of: Callable[[Sequence[str]], Mapping[str, str]] | None = None,
    rules: AiRules | None = None,
    reference_scores: Sequence[float] | None = None,
    dispositions_of: Callable[[Sequence[str]], Mapping[str, Disposition]] | None = None,
    group_by: str | None = None,
    texts_for: Callable[[Sequence[Mapping[str, Any]]], PairTexts] | None = None,
    reuse_from: UserPath | None = None,
) -> InstructorPaths:
    """Build the wide table and the page from the run folder and write them (+ ``latest/``).

    ``tables`` defaults to the run folder's Parquet reports, ``cohort_matches`` to its
    ``cohort_matches.parquet`` when present; the files already in ``<run>/files/`` are linked.
    ``names_of(document_ids)``, when given instead of ``names``, is asked for each chunk's names.
    From the run folder, the wide table is built :data:`CHUNK` submissions at a time and
    written as it goes (Parquet, CSV), then read back in chunks while the page is written:
    a 20,000-document run never has its wide rows, its page or its CSV whole in memory.
    ``rules`` are the run's AI rules (gate, bands, threshold); ``reference_scores`` the AI
    scores of ``rules.reference_campaign`` (known-human work): the expected false flags, stated
    on the page and in ``calibration.json`` (unknown without them). ``dispositions_of(document_ids)``
    gives each chunk's review decisions (``doccheck review``), shown and applied to the flags.
    ``group_by`` names a documents column (or a manifest metadata column): with two groups
    or more, ``report.html`` lists the groups and each has its page in ``<run>/groups/``
    (ValueError naming the columns when there is no such column).
    ``texts_for(pairs)`` reads the shown cohort pairs' texts for their shared passages
    (:mod:`doccheck.outputs.instructor._evidence`; none without it).
    ``reuse_from``: an earlier run folder built from the same inputs (:mod:`doccheck.outputs._reuse`),
    whose wide table and group pages are taken and made this run's instead of built again.
    """
    final = final_dir(run_dir)
    folder = work_dir(final)  # the ``.partial`` folder of a staged run (local), published at the end
    rules = (rules or AiRules()).with_reference(reference_scores or [])
    source = _WideSource.of(folder, tables, names, cohort_matches, rules)
    group = group_column(group_by, documents_schema(source.meta).names)
    run = {"campaign": campaign, "run_id": run_id, "status": status}
    tally, kept = _wide_table_and_pages(folder, source, group, run, names_of, dispositions_of, reuse_from)
    calibration = calibrate(rules.reference_campaign, reference_scores or [], rules.threshold, tally.judged)
    write_calibration(folder, calibration)
    parquet_path = folder / DOCUMENTS_PARQUET
    documents: Callable[[], Iterable[Mapping[str, Any]]]
    if tables is not None:
        documents = lambda: kept  # noqa: E731
    else:
        documents = lambda: (r for batch in _parquet_chunks(parquet_path) for r in batch)  # noqa: E731

    # Generated once (the slow part for 10,000 rows); the file links' prefix differs per copy.
    marker = f"doccheck-link-prefix-{uuid.uuid4().hex}/"
    evidence = evidence_section(source.cohort_matches, texts_for,
                                lambda ids: files_by_document(folder, ids, FILE_KINDS), marker)  # fmt: skip
    pieces = generate_report(tally, documents, campaign=campaign, run_id=run_id, status=status,
                             cohort_matches=source.cohort_matches, download_failures=download_failures,
                             spent_cents=spent_cents, link_prefix=marker, group_prefix=marker,
                             rules=source.builder.rules, calibration=calibration,
                             evidence_html=evidence)  # fmt: skip
    targets = [(folder / REPORT_HTML, "")]
    latest = None if latest_dir is None else resolve(latest_dir)
    latest_stage: Path | None = None
    if latest is not None:  # a complete copy beside latest/, swapped in once the run folder is complete
        latest_stage = begin_latest(latest, folder, [*REPORT_FILES.values(), DOCUMENTS_PARQUET, DOCUMENTS_CSV,
                                                      CALIBRATION_JSON])  # fmt: skip
        targets.append((latest_stage / REPORT_HTML, f"../{quote(final.name)}/"))
    with discarding(latest_stage):
        _atomic_pieces(targets, pieces, marker)
        publish(final, latest, latest_stage)
    latest_html = latest / REPORT_HTML if latest is not None else None
    return InstructorPaths(final / REPORT_HTML, final / DOCUMENTS_PARQUET, final / DOCUMENTS_CSV, latest_html)


def _wide_table_and_pages(
    folder: Path,
    source: _WideSource,
    group: str | None,
    run: Mapping[str, Any],
    names_of: Callable[[Sequence[str]], Mapping[str, str]] | None,
    dispositions_of: Callable[[Sequence[str]], Mapping[str, Disposition]] | None,
    reuse_from: UserPath | None,
) -> tuple[PageTally, list[dict[str, Any]]]:
    """The wide table and the group pages: taken from ``reuse_from`` when it can be (rows read
    from the run folder only), else built; the page's tally and (rows given in memory) the rows."""
    campaign, run_id, status = run["campaign"], run["run_id"], run["status"]
    if reuse_from is not None and source.lookups is not None and run_id is not None:
        reused = reuse_instructor_files(folder, reuse_from, PageTally(source.builder.rules, group),
                                        campaign=campaign, run_id=run_id, status=status)  # fmt: skip
        if reused is not None:
            return reused, []
    tally, kept = _write_wide_table(folder, source, names_of, dispositions_of, group,
                                    run={"campaign": campaign, "run_id": run_id})  # fmt: skip
    write_group_pages(folder, tally, campaign=campaign, run_id=run_id, status=status,
                      rows=(lambda: kept) if source.lookups is None else None)  # fmt: skip
    return tally, kept


@dataclass
class _WideSource:
    """Where the wide rows come from: rows given in memory, or the run folder's files in chunks."""

    builder: DocumentsBuilder
    meta: list[str]
    rows: int  # submissions rows, known before they are read
    chunks: Iterable[Sequence[Mapping[str, Any]]]
    cohort_matches: Sequence[Mapping[str, Any]] | None
    lookups: _FolderLookups | None  # None: the rows were given (``tables``)

    @classmethod
    def of(cls, folder: Path, tables: Mapping[str, Sequence[Mapping[str, Any]]] | None,
           names: Mapping[str, str] | None, cohort_matches: Sequence[Mapping[str, Any]] | None,
           rules: AiRules) -> _WideSource:  # fmt: skip
        """The source of ``tables`` when given, else of the run folder."""
        if tables is not None:
            if cohort_matches is None:
                # A report table of its own when the cohort comparison registers one, else its file.
                present = tables.get("cohort_matches")
                cohort_matches = list(present) if present is not None else _read_cohort(folder)
            builder = DocumentsBuilder.from_tables(tables, names=names, cohort_matches=cohort_matches, rules=rules)
            given = list(tables.get("submissions", []))
            meta = list(dict.fromkeys(k for r in given for k in r if k.startswith(META_PREFIX)))
            return cls(builder, meta, len(given), [given], cohort_matches, None)
        if cohort_matches is None:
            cohort_matches = _read_cohort(folder) or []
        builder = DocumentsBuilder(ai={}, sim={}, top_sources={}, document_of_check={}, names=names,
                                   cohort_matches=cohort_matches, rules=rules)  # fmt: skip
        subs_path = folder / REPORT_FILES["submissions"]
        meta, rows = [], 0
        if subs_path.is_file():
            subs_file = pq.ParquetFile(subs_path)
            meta = [n for n in subs_file.schema_arrow.names if n.startswith(META_PREFIX)]
            rows = subs_file.metadata.num_rows
        return cls(builder, meta, rows, _parquet_chunks(subs_path), cohort_matches, _FolderLookups(folder))


def _write_wide_table(
    folder: Path,
    source: _WideSource,
    names_of: Callable[[Sequence[str]], Mapping[str, str]] | None,
    dispositions_of: Callable[[Sequence[str]], Mapping[str, Disposition]] | None = None,
    group_by: str | None = None,
    run: Mapping[str, Any] | None = None,
) -> tuple[PageTally, list[dict[str, Any]]]:
    """Write ``documents.parquet`` and ``.csv`` chunk by chunk; the page's tally and (rows
    given in memory only) the rows, rendered from memory as they were built. ``run``: the
    ``campaign`` and ``run_id`` columns, the same on every row."""
    schema = documents_schema(source.meta)
    tally = PageTally(source.builder.rules, group_by)
    kept: list[dict[str, Any]] = []
    tmp = folder / f".{DOCUMENTS_PARQUET}.tmp-{uuid.uuid4().hex}"
    try:
        with pq.ParquetWriter(tmp, schema) as parquet, CsvChunks(folder / DOCUMENTS_CSV, schema.names) as csv_file:
            for subs in source.chunks:
                ids = [str(r["document_id"]) for r in subs if r.get("document_id") is not None]
                builder = source.builder if source.lookups is None else source.lookups.builder(source.builder, subs)
                if names_of is not None:
                    builder = builder.with_names(names_of(ids))
                rows = builder.rows(subs, files_by_document(folder, ids, FILE_KINDS))
                if dispositions_of is not None:
                    apply_dispositions(rows, dispositions_of(ids))
                for row in rows:
                    row.update(run or {})
                table = documents_table(rows, schema)
                parquet.write_table(table)
                csv_file.write_table(table)
                tally.add(rows)
                if source.lookups is None:
                    kept.extend(rows)
        os.replace(tmp, folder / DOCUMENTS_PARQUET)
    finally:
        tmp.unlink(missing_ok=True)
    return tally, kept


#: Submissions per chunk when the wide table is built from the run folder's files.
CHUNK = 2000


def _parquet_chunks(path: Path, columns: Sequence[str] | None = None) -> Iterator[list[dict[str, Any]]]:
    """The rows of a Parquet file, :data:`CHUNK` at a time (nothing when it is absent)."""
    if not path.is_file():
        return
    source = pq.ParquetFile(path)
    wanted = None if columns is None else [c for c in columns if c in source.schema_arrow.names]
    for batch in source.iter_batches(batch_size=CHUNK, columns=wanted, use_threads=False):
        yield batch.to_pylist()


class _FolderLookups:
    """The product and source columns a wide row takes, kept as Arrow tables (columnar,
    a few bytes a document) and turned into Python rows one chunk of documents at a time:
    the wide table's Python memory does not grow with the run."""

    def __init__(self, folder: Path) -> None:
        self._ai = _arrow(folder / REPORT_FILES["ai_results"], ("document_id", "status", "label", "score", "words"))
        self._sim = _arrow(folder / REPORT_FILES["similarity_results"],
                           ("document_id", "status", "score", "matched_words"))  # fmt: skip
        self._sources = _arrow(folder / REPORT_FILES["similarity_sources"], _SOURCE_COLUMNS)
        self._checks = _arrow(folder / REPORT_FILES["submissions"], ("check_id", "document_id"))

    def builder(self, base: DocumentsBuilder, submissions: Sequence[Mapping[str, Any]]) -> DocumentsBuilder:
        """``base`` with the lookups of these submissions rows (rows in file order, so that
        the last of a document wins and its top source is the first of equals, as in memory)."""
        ids = pa.array([r.get("document_id") for r in submissions], pa.string())
        top = TopSources()
        top.add(_rows_of(self._sources, "document_id", ids))
        named = pa.array([str(b.get("source_id")) for b in top.best.values() if b.get("kind") == "submission"],
                         pa.string())  # fmt: skip
        return base.with_lookups(
            ai={r.get("document_id"): r for r in _rows_of(self._ai, "document_id", ids)},
            sim={r.get("document_id"): r for r in _rows_of(self._sim, "document_id", ids)},
            top_sources=top.best,
            document_of_check=checks_to_documents(_rows_of(self._checks, "check_id", named)),
        )


def _arrow(path: Path, columns: Sequence[str]) -> pa.Table | None:
    """These columns of a report file (None when the file is absent)."""
    if not path.is_file():
        return None
    names = pq.read_schema(path).names
    # ParquetFile, not read_table: read_table imports pyarrow.dataset (~15 MB of RSS for nothing here)
    return pq.ParquetFile(path).read(columns=[c for c in columns if c in names], use_threads=False)


def _rows_of(table: pa.Table | None, column: str, values: pa.Array) -> list[dict[str, Any]]:
    """The rows of ``table`` whose ``column`` is one of ``values``, in table order."""
    if table is None or len(values) == 0 or column not in table.column_names:
        return []
    rows: list[dict[str, Any]] = table.filter(pc.is_in(table[column], value_set=values)).to_pylist()
    return rows


_SOURCE_COLUMNS = ("document_id", "source_id", "title", "url", "kind", "matched_words", "percent",
                   "matched_document_id")  # fmt: skip


def _atomic_pieces(targets: Sequence[tuple[Path, str]], pieces: Iterable[str], marker: str) -> None:
    """Write the pieces to every target (``marker`` replaced by the target's prefix), each
    through a temporary file renamed over it once complete."""
    tmps = [path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}") for path, _ in targets]
    handles = []
    try:
        handles = [open(tmp, "w", encoding="utf-8") for tmp in tmps]  # noqa: SIM115
        prefixes = [prefix for _, prefix in targets]
        for piece in pieces:
            if marker in piece:
                for handle, prefix in zip(handles, prefixes, strict=True):
                    handle.write(piece.replace(marker, prefix))
            else:
                for handle in handles:
                    handle.write(piece)
        for handle in handles:
            handle.close()
        for tmp, (path, _) in zip(tmps, targets, strict=True):
            os.replace(tmp, path)
    finally:
        for handle in handles:
            handle.close()
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
