"""Parquet reports of a run, with explicit pyarrow schemas, one folder per run and a ``latest/`` copy.

Explicit schemas mean an empty report still has the right columns and types, so a notebook
or a dashboard never breaks on a week with no similarity checks. Callers (the pipeline)
hand over plain row dicts; a missing key is a null, a key the schema does not know is
ignored. Caller metadata is joined back by ``document_id`` as extra string columns named
``meta_<column>``, so that it can never clash with a report column.

The run folder is written as ``<out>/.<run>.partial/`` and renamed when complete; ``latest/``
is refreshed by writing a complete temporary folder and then swapping it in with renames, so a
reader sees either the previous complete reports or the new ones. ``out`` may be a store's URL:
the folder is then built on the local disk and published behind its ``run.json``
(:mod:`doccheck.outputs._report_folders`).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from doccheck.errors import ReportError
from doccheck.guards import naming
from doccheck.outputs._freed_memory import return_freed_memory
from doccheck.outputs._lms_columns import LMS_FIELDS, NEW_FIELD, lms_rows, mark_new, run_sidecar
from doccheck.outputs._report_folders import (
    begin_latest,
    discarding,
    local_dir,
    publish,
    staging_dir,
    start_run_folder,
)
from doccheck.outputs._reuse import FolderInputs, copy_reports, reports_digest, write_inputs
from doccheck.sources.manifest import Rejection
from doccheck.storage import UserPath, resolve

__all__ = [
    "AI_RESULTS_SCHEMA",
    "COHORT_MATCHES_SCHEMA",
    "LATEST",
    "META_PREFIX",
    "REPORT_FILES",
    "SCHEMAS",
    "SIMILARITY_RESULTS_SCHEMA",
    "SIMILARITY_SOURCES_SCHEMA",
    "SUBMISSIONS_SCHEMA",
    "LedgerReportTables",
    "ReportPaths",
    "ReportTables",
    "rejection_rows",
    "to_dataframes",
    "to_tables",
    "write_reports",
]

TIMESTAMP = pa.timestamp("ms", tz="UTC")
META_PREFIX = "meta_"
LATEST = "latest"

SUBMISSIONS_SCHEMA = pa.schema(
    [
        pa.field("document_id", pa.string()),
        pa.field("row_number", pa.int64()),
        pa.field("mode", pa.string()),  # text | multipart | upload | rejected
        pa.field("idempotency_key", pa.string()),
        pa.field("check_id", pa.string()),
        pa.field("products", pa.list_(pa.string())),
        pa.field("status", pa.string()),
        pa.field("error_code", pa.string()),
        pa.field("error_message", pa.string()),
        pa.field("words", pa.int64()),
        pa.field("cost_cents", pa.int64()),  # = net_cents (kept for readers of the first schema)
        # Money as the service counts it, on the first row of each check only (rows that
        # share a check, identical content, show 0), so each column sums to the truth.
        pa.field("charged_cents", pa.int64()),
        pa.field("refunded_cents", pa.int64()),
        pa.field("net_cents", pa.int64()),
        *LMS_FIELDS,  # an LMS export's student columns (doccheck.outputs._lms_columns); null for a manifest's rows
        NEW_FIELD,  # new_this_run: this run made the check (true) or reused an earlier run's (false)
        # original: the file (or a text row's text) was sent; text: the service does not take the
        # file's type, so the text doccheck read from it was checked; null: nothing sent (rejected)
        pa.field("sent_as", pa.string()),
        # what the file was read as from its bytes (odt), the type its name says (docx), and whether they differ
        pa.field("read_as", pa.string()),
        pa.field("named_as", pa.string()),
        pa.field("misnamed", pa.bool_()),
    ]
)
AI_RESULTS_SCHEMA = pa.schema(
    [
        pa.field("document_id", pa.string()),
        pa.field("check_id", pa.string()),
        pa.field("status", pa.string()),
        pa.field("score", pa.float64()),
        pa.field("label", pa.string()),
        pa.field("words", pa.int64()),
        pa.field("completed_at", TIMESTAMP),
        pa.field("error_code", pa.string()),
        pa.field("error_message", pa.string()),  # the service's own words for a failure
        pa.field("contradiction", pa.string()),  # a delivery that contradicted the final status
    ]
)
SIMILARITY_RESULTS_SCHEMA = pa.schema(
    [
        pa.field("document_id", pa.string()),
        pa.field("check_id", pa.string()),
        pa.field("status", pa.string()),
        pa.field("score", pa.float64()),
        pa.field("matched_words", pa.int64()),
        pa.field("source_count", pa.int64()),
        pa.field("completed_at", TIMESTAMP),
        pa.field("error_code", pa.string()),
        pa.field("error_message", pa.string()),  # the service's own words for a failure
        pa.field("contradiction", pa.string()),  # a delivery that contradicted the final status
    ]
)
SIMILARITY_SOURCES_SCHEMA = pa.schema(
    [
        pa.field("document_id", pa.string()),
        pa.field("check_id", pa.string()),
        pa.field("source_id", pa.string()),
        pa.field("title", pa.string()),
        pa.field("url", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("matched_words", pa.int64()),
        pa.field("percent", pa.float64()),
        # the document of this campaign behind a ``submission`` source, when it is one of our own checks
        pa.field("matched_document_id", pa.string()),
    ]
)
#: Pairs found by local cohort matching (doccheck.matching; docs/matching.md), one row per pair.
COHORT_MATCHES_SCHEMA = pa.schema(
    [
        pa.field("document_id", pa.string()),  # this run's document
        pa.field("matched_document_id", pa.string()),
        pa.field("kind", pa.string()),  # identical | near_duplicate | copied_section
        pa.field("percent", pa.float64()),  # overlap, percent of document_id's shingles
        pa.field("matched_percent", pa.float64()),  # overlap, percent of matched_document_id's shingles
        pa.field("matched_words", pa.int64()),
        pa.field("jaccard", pa.float64()),
        pa.field("run_id", pa.string()),
        pa.field("matched_run_id", pa.string()),  # null: the same run; else the earlier run
    ]
)

#: Table name → schema; the table name is also the file stem (``<name>.parquet``).
SCHEMAS: dict[str, pa.Schema] = {
    "submissions": SUBMISSIONS_SCHEMA,
    "ai_results": AI_RESULTS_SCHEMA,
    "similarity_results": SIMILARITY_RESULTS_SCHEMA,
    "similarity_sources": SIMILARITY_SOURCES_SCHEMA,
    "cohort_matches": COHORT_MATCHES_SCHEMA,
}
REPORT_FILES: dict[str, str] = {name: f"{name}.parquet" for name in SCHEMAS}

_SAFE_LABEL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._\-]{0,199}$")


@dataclass
class ReportTables:
    """Rows of each report as plain dicts (missing keys → null, unknown keys ignored)."""

    submissions: list[Mapping[str, Any]] = field(default_factory=list)
    ai_results: list[Mapping[str, Any]] = field(default_factory=list)
    similarity_results: list[Mapping[str, Any]] = field(default_factory=list)
    similarity_sources: list[Mapping[str, Any]] = field(default_factory=list)
    cohort_matches: list[Mapping[str, Any]] = field(default_factory=list)


#: One chunk of report rows: table name → rows (a table may be missing).
ReportChunk = Mapping[str, Sequence[Mapping[str, Any]]]


class LedgerReportTables(ReportTables):
    """A ``ReportTables`` whose rows come in chunks from a source (the ledger), read again
    on each use: :func:`write_reports` streams the chunks to Parquet, so writing the
    reports of a 20,000-document run holds one chunk of rows at a time, never the run's.

    The list attributes (``submissions``...) still work: the first one read collects every
    chunk into lists (the whole run in memory, as a plain ``ReportTables`` holds it).
    """

    def __init__(  # noqa: D107
        self, chunks: Callable[[], Iterable[ReportChunk]], *, ledger: Any = None, run_id: str | None = None
    ) -> None:
        self._source = chunks
        self._rows: dict[str, list[Mapping[str, Any]]] | None = None
        self.ledger, self.run_id = ledger, run_id  # the source, when it is a ledger's run (reuse)

    def __repr__(self) -> str:  # the dataclass repr would read the whole run
        return f"{type(self).__name__}(<rows read in chunks>)"

    def chunks(self) -> Iterator[ReportChunk]:
        """The rows, chunk by chunk, in report order (a new read of the source)."""
        return iter(self._source())

    def _all(self) -> dict[str, list[Mapping[str, Any]]]:
        if self._rows is None:
            rows: dict[str, list[Mapping[str, Any]]] = {name: [] for name in SCHEMAS}
            for part in self.chunks():
                for name, chunk_rows in part.items():
                    if name in rows:
                        rows[name].extend(chunk_rows)
            self._rows = rows
        return self._rows

    submissions = property(lambda self: self._all()["submissions"])
    ai_results = property(lambda self: self._all()["ai_results"])
    similarity_results = property(lambda self: self._all()["similarity_results"])
    similarity_sources = property(lambda self: self._all()["similarity_sources"])
    cohort_matches = property(lambda self: self._all()["cohort_matches"])

    @classmethod
    def from_ledger(cls, ledger: Any, *, run_id: str | None = None, campaign: str | None = None) -> LedgerReportTables:
        """A run's (or a campaign's latest run's) report, read from ``ledger`` chunk by chunk.

        Here and not in the ledger: the ledger records and reads rows, the reports are an
        output built from them (so the ledger needs no pyarrow and never imports this module).
        """
        from doccheck.ledger import iter_report_chunks, resolve_run

        rid = resolve_run(ledger, run_id=run_id, campaign=campaign)
        return cls(
            lambda: lms_rows(mark_new(iter_report_chunks(ledger, run_id=rid), ledger, rid), run_sidecar(ledger, rid)),
            ledger=ledger,
            run_id=rid,
        )

    def inputs(self, metadata: Mapping[str, Mapping[str, str]] | None) -> str | None:
        """The ``reports`` digest of these tables (:mod:`doccheck.outputs._reuse`), with the
        LMS export's sidecar the rows are joined with; None when they are not a ledger's run."""
        from doccheck.ledger import report_inputs_digest

        if self.ledger is None or self.run_id is None:
            return None
        sidecar = run_sidecar(self.ledger, self.run_id)
        ledger = report_inputs_digest(self.ledger, self.run_id)
        return reports_digest(ledger, _metadata_columns(metadata), sidecar)

    def submitted_in_run(self) -> bool:
        """Whether the run submitted a check (its ``new_this_run`` flags are its own: no other
        run's folder is taken for it)."""
        from doccheck.ledger import submitted_in_run

        return self.ledger is not None and self.run_id is not None and submitted_in_run(self.ledger, self.run_id)


@dataclass(frozen=True)
class ReportPaths:
    """Where one run's reports were written (files in ``run_dir``; same names in ``latest_dir``):
    local paths, or locations on a store (``doccheck.storage.display`` shows them)."""

    run_dir: UserPath
    latest_dir: UserPath
    submissions: UserPath
    ai_results: UserPath
    similarity_results: UserPath
    similarity_sources: UserPath
    cohort_matches: UserPath | None = None

    def files(self) -> dict[str, UserPath]:
        """Table name → file in the run folder."""
        return {name: getattr(self, name) for name in SCHEMAS}


def run_label(campaign: str, run_id: str, now: datetime | None = None) -> str:
    """Folder name of a run's reports: ``<campaign>-<UTC time to the millisecond>-<run id prefix>``.

    Safe characters only. Milliseconds because a ``collect`` that follows its run within the
    same second must get a folder of its own, not overwrite the run's.
    """
    moment = now or datetime.now(UTC)
    stamp = moment.strftime("%Y%m%dT%H%M%S") + f"{moment.microsecond // 1000:03d}Z"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", campaign).strip("-.") or "run"
    return f"{safe[:60]}-{stamp}-{run_id[:8]}"


def rejection_rows(rejections: Iterable[Rejection]) -> list[dict[str, Any]]:
    """Submissions rows for rejected manifest rows: status and mode ``rejected``, zero cost."""
    return [
        {
            "document_id": r.document_id,
            "row_number": r.row_number,
            "mode": "rejected",
            "status": "rejected",
            "error_code": r.code,
            "error_message": r.reason,
            "cost_cents": 0,
        }
        for r in rejections
    ]


def to_tables(tables: ReportTables, metadata: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, pa.Table]:
    """Build the four pyarrow tables with their schemas (plus ``meta_*`` columns when given)."""
    meta_columns = _metadata_columns(metadata)
    built: dict[str, pa.Table] = {}
    for name, schema in SCHEMAS.items():
        rows = getattr(tables, name)
        if name == "submissions":
            rows = [_normalise_rejected(row) for row in rows]
        table = _build_table(name, schema, rows)
        if meta_columns:
            table = _join_metadata(table, metadata or {}, meta_columns)
        built[name] = table
    return built


def to_dataframes(tables: ReportTables, metadata: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, Any]:
    """The same tables as pandas DataFrames with Arrow-backed dtypes.

    Arrow dtypes keep the schema exactly (nullable integers stay integers, timestamps stay
    UTC milliseconds), so a DataFrame converts back to the same Parquet schema.
    """
    import pandas as pd

    return {name: table.to_pandas(types_mapper=pd.ArrowDtype) for name, table in to_tables(tables, metadata).items()}


def write_reports(
    out_dir: UserPath | str,
    run_label: str,
    tables: ReportTables,
    metadata: Mapping[str, Mapping[str, str]] | None = None,
    *,
    staged: bool = False,
    latest: bool = True,
) -> ReportPaths:
    """Write ``out_dir/<run_label>/*.parquet`` and atomically refresh ``out_dir/latest/``.

    The files are written in ``out_dir/.<run_label>.partial/``, which is renamed to the run
    folder once they are all there, then ``latest/`` is swapped to a copy of them: a full
    disk or a kill leaves the previous run folder and ``latest/`` as they were. ``out_dir``
    may be a store's URL (the ``.partial`` folder is then local, published behind ``run.json``).
    ``staged``: stop before the rename (``run_dir`` is then not there yet): the instructor's
    files are added to the ``.partial`` folder, and ``write_instructor_files`` publishes the
    run folder and ``latest/`` together, so ``latest/`` never shows reports without their page.
    ``latest=False``: leave ``latest/`` alone (``collect`` rewriting an earlier run's reports).

    ``run_label`` must be a plain folder name (letters, digits, ``.``, ``_``, ``-``; not
    ``latest``). Rewriting the same label replaces its files (``collect_results`` does that).
    """
    if not _SAFE_LABEL.match(run_label or "") or run_label in (LATEST, ".", "..") or run_label.startswith("."):
        raise ReportError(f"invalid run label {run_label!r}: use letters, digits, '.', '_' or '-' (not 'latest')")
    return_freed_memory()  # what the run's reading freed on its threads is not counted in the reports' peak
    out = resolve(out_dir)
    run_dir = out / run_label
    latest_dir = out / LATEST
    with naming(staging_dir(local_dir(run_dir))):  # a full disk names the folder being written
        stage = start_run_folder(run_dir)
        latest_stage = None
        with discarding(stage):
            if isinstance(tables, LedgerReportTables):
                _write_from_ledger(stage, out, run_label, tables, metadata)
            else:
                built = to_tables(tables, metadata)
                for name, table in built.items():
                    _write_atomic(table, stage / REPORT_FILES[name])
            if not staged:
                latest_stage = begin_latest(latest_dir, stage, REPORT_FILES.values()) if latest else None
                with discarding(latest_stage):
                    publish(run_dir, latest_dir, latest_stage)
    return ReportPaths(
        run_dir=run_dir,
        latest_dir=latest_dir,
        **{name: run_dir / REPORT_FILES[name] for name in SCHEMAS},
    )


# --------------------------------------------------------------------------- internals


def _write_from_ledger(
    stage: Path, out: UserPath, label: str, tables: LedgerReportTables, metadata: Mapping[str, Mapping[str, str]] | None
) -> None:
    """The reports of a ledger's run: the campaign's last folder's, rewritten for this run, when
    they were built from the same inputs (:mod:`doccheck.outputs._reuse`), else from the ledger."""
    inputs = tables.inputs(metadata)
    reused = None
    if inputs is not None and tables.run_id is not None and not tables.submitted_in_run():
        campaign = getattr(tables.ledger.get_run(tables.run_id), "campaign", None)
        names = list(dict.fromkeys(REPORT_FILES.values()))
        reused = copy_reports(stage, out, label, campaign=campaign, run_id=tables.run_id, inputs=inputs, names=names)
    if reused is None:
        _write_streamed(stage, tables.chunks(), metadata)
    if inputs is not None:
        write_inputs(stage, FolderInputs(reports=inputs, reused=reused))


def _write_atomic(table: pa.Table, target: Path) -> None:
    """Write next to the target, then rename over it: no reader ever sees half a file."""
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _write_streamed(
    run_dir: Path, chunks: Iterable[ReportChunk], metadata: Mapping[str, Mapping[str, str]] | None
) -> None:
    """Every report file from chunks of rows: one Parquet writer per table, a record batch
    per chunk, each file written next to its target and renamed over it at the end (all or
    nothing: an error leaves the previous files of the folder as they were)."""
    meta_columns = _metadata_columns(metadata)
    schemas = {
        name: pa.schema([*schema, *(pa.field(META_PREFIX + c, pa.string()) for c in meta_columns)])
        for name, schema in SCHEMAS.items()
    }
    tmps = {name: run_dir / f".{REPORT_FILES[name]}.tmp-{uuid.uuid4().hex}" for name in SCHEMAS}
    writers: dict[str, pq.ParquetWriter] = {}
    try:
        writers = {name: pq.ParquetWriter(tmps[name], schemas[name]) for name in SCHEMAS}
        offsets = dict.fromkeys(SCHEMAS, 0)
        for part in chunks:
            known = _chunk_metadata(metadata, part) if meta_columns else {}
            for name, rows in part.items():
                if name not in SCHEMAS or not rows:
                    continue
                if name == "submissions":
                    rows = [_normalise_rejected(row) for row in rows]
                table = _build_table(name, SCHEMAS[name], rows, offset=offsets[name])
                if meta_columns:
                    table = _join_metadata(table, known, meta_columns)
                writers[name].write_table(table)
                offsets[name] += len(rows)
        for writer in writers.values():
            writer.close()
        for name in SCHEMAS:
            os.replace(tmps[name], run_dir / REPORT_FILES[name])
    finally:
        for writer in writers.values():
            if writer.is_open:
                writer.close()
        for tmp in tmps.values():
            tmp.unlink(missing_ok=True)


def _native_types(type_: pa.DataType) -> tuple[type, ...]:
    """The Python types Arrow converts to ``type_`` exactly as :func:`_coerce` would (None aside)."""
    if pa.types.is_string(type_):
        return (str,)
    if pa.types.is_integer(type_):
        return (int,)  # bool is a subclass: refused by the exact-type test of _fast_array
    if pa.types.is_floating(type_):
        return (float, int)
    if pa.types.is_boolean(type_):
        return (bool,)
    if pa.types.is_timestamp(type_):
        return (datetime,)  # naive is read as UTC, aware converted: as _as_utc does
    return ()


def _fast_array(values: list[Any], type_: pa.DataType) -> pa.Array | None:
    """The column in one Arrow call when every value already has a native type (the ledger's
    rows do), else None (then each value goes through :func:`_coerce`, with its error message)."""
    native = _native_types(type_)
    if not native or not {type(v) for v in values} <= {*native, type(None)}:
        return None
    try:
        return pa.array(values, type=type_, from_pandas=True)  # from_pandas: NaN → null
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None


def _build_table(name: str, schema: pa.Schema, rows: Sequence[Mapping[str, Any]], offset: int = 0) -> pa.Table:
    arrays = []
    for fld in schema:
        fast = _fast_array([row.get(fld.name) for row in rows], fld.type)
        if fast is not None:
            arrays.append(fast)
            continue
        values = []
        for index, row in enumerate(rows, start=offset):
            try:
                values.append(_coerce(row.get(fld.name), fld.type))
            except (TypeError, ValueError) as exc:
                raise ReportError(
                    f"{name} row {index} (document_id {row.get('document_id')!r}), column {fld.name!r}: {exc}"
                ) from None
        try:
            arrays.append(pa.array(values, type=fld.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise ReportError(f"{name}, column {fld.name!r}: {exc}") from None
    return pa.Table.from_arrays(arrays, schema=schema)


def _normalise_rejected(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """A rejected row always reads ``mode = rejected`` and costs 0, whoever built the row."""
    if row.get("status") != "rejected":
        return row
    fixed = dict(row)
    if not fixed.get("mode"):
        fixed["mode"] = "rejected"
    for money in ("cost_cents", "charged_cents", "refunded_cents", "net_cents"):
        if fixed.get(money) is None:
            fixed[money] = 0
    return fixed


def _coerce(value: Any, type_: pa.DataType) -> Any:
    """Tolerate the shapes the pipeline naturally has (ISO strings, enums, tuples, ';' lists)."""
    if value is None:
        return None
    if isinstance(value, float) and value != value:  # NaN → null, the pandas habit
        return None
    if pa.types.is_timestamp(type_):
        return _as_utc(value)
    if pa.types.is_list(type_):
        if isinstance(value, str):
            return [v.strip() for v in re.split(r"[;|,]", value) if v.strip()]
        return [str(v) for v in value]
    if pa.types.is_string(type_):
        enum_value = getattr(value, "value", None)
        return str(enum_value if isinstance(enum_value, str) else value)
    if pa.types.is_integer(type_):
        if isinstance(value, bool):
            raise TypeError("a boolean is not an integer")
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"{value!r} is not a whole number")
        return int(value)
    if pa.types.is_floating(type_):
        if isinstance(value, bool):
            raise TypeError("a boolean is not a number")
        return float(value)
    return value


def _as_utc(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value.strip())
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        value = datetime.fromtimestamp(value, tz=UTC)  # unix seconds
    elif isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, datetime):
        raise TypeError(f"{type(value).__name__} is not a timestamp")
    # The interface's timestamps are UTC; a naive one can only mean UTC.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _metadata_columns(metadata: Mapping[str, Mapping[str, str]] | None) -> list[str]:
    """Metadata column names in first-seen order, ``document_id`` excluded (already a column).

    A mapping that reads the ledger as it goes (``Ledger.document_metadata``) says its own
    columns in one pass that keeps only the names."""
    if metadata is not None and callable(getattr(metadata, "columns", None)):
        return list(metadata.columns())  # type: ignore[attr-defined]
    columns: list[str] = []
    for values in (metadata or {}).values():
        for key in values:
            if key != "document_id" and key not in columns:
                columns.append(key)
    return columns


def _chunk_metadata(
    metadata: Mapping[str, Mapping[str, str]] | None, part: Mapping[str, Sequence[Mapping[str, Any]]]
) -> Mapping[str, Mapping[str, str]]:
    """The metadata of one chunk's documents: as the chunk read it (``LEDGER_PART``), else read
    once for all the chunk's tables (``RunMetadata.for_ids``); a plain mapping is used as it is."""
    if metadata is None or not callable(getattr(metadata, "for_ids", None)):
        return metadata or {}
    from doccheck.ledger import LEDGER_PART

    if (read := part.get(LEDGER_PART)) is not None:
        return {str(r["document_id"]): r["metadata"] for r in read}
    ids = {row.get("document_id") for rows in part.values() for row in rows}
    return metadata.for_ids(str(i) for i in ids if i is not None)  # type: ignore[attr-defined,no-any-return]


def _join_metadata(table: pa.Table, metadata: Mapping[str, Mapping[str, str]], columns: list[str]) -> pa.Table:
    ids = table.column("document_id").to_pylist()
    for column in columns:
        values = []
        for document_id in ids:
            row = metadata.get(document_id) if document_id is not None else None
            value = row.get(column) if row is not None else None
            values.append(None if value is None else str(value))
        name = META_PREFIX + column
        table = table.append_column(pa.field(name, pa.string()), pa.array(values, pa.string()))
    return table
