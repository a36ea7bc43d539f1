"""The notebook API: check a pandas DataFrame of texts or file paths, get DataFrames back.

Why: data teams live in notebooks. ``check_dataframe(df)`` does what ``doccheck run`` does:
validate every row, submit with deterministic Idempotency-Keys recorded in the ledger (a
rerun of the same cell charges nothing), wait for results; and returns the four report
tables as DataFrames with the SAME schemas as the Parquet reports
(``doccheck.outputs.to_dataframes``). ``plan_dataframe(df)`` is the dry run (what would be
sent and what it would cost). No Prefect needed: the run is the same orchestration as the
flow's (``doccheck.pipeline.run_checks``) with its steps called directly, and the
arguments become the same options model (``doccheck.pipeline.RunOptions``).
``use_prefect=True`` runs the ``bulk_check`` flow instead, for a run that shows in the
Prefect UI.

The DataFrame's columns are read by the manifest's own names (``document_id``, ``text``,
``path``, ``products``, ``name``) unless told otherwise. Everything that can be wrong with
the call itself (a missing column, no API key) raises before any thread or event loop
starts, so a notebook shows one short error naming the fix, not a page of asyncio frames.

Jupyter already runs an event loop, where ``asyncio.run`` is refused; the sync
:func:`check_dataframe` therefore runs the work in a worker thread with its own loop when a
loop is running, and :func:`acheck_dataframe` is there for ``await`` in async code. Progress
is a live line in Jupyter (``doccheck.notebook._progress``).

Rows are validated exactly like manifest rows (the DataFrame is written to a temporary
JSONL manifest): a bad row is rejected with a reason naming the row (its 1-based position
in the DataFrame) and never sinks the others. File paths are relative to ``base_dir``
(default: the current folder) and may not leave it; when a path column is used, the
temporary manifest is written into ``base_dir`` as a hidden file and removed at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from doccheck.notebook._frames import ID_COLUMN
from doccheck.notebook._frames import manifest_rows as _manifest_rows
from doccheck.notebook._frames import resolve_columns as _resolve_columns
from doccheck.notebook._frames import write_manifest as _write_manifest
from doccheck.notebook._progress import RunProgress, progress_display
from doccheck.pipeline import DEFAULTS, OverlappingLocalSteps, Prepared, RunObserver, RunOptions, run_checks
from doccheck.storage import UserPath, arrow_filesystem, display, resolve

if TYPE_CHECKING:  # pandas is imported lazily: `import doccheck` stays light
    import pandas as pd

    from doccheck.pipeline import BatchResult, RunSummary

__all__ = ["CheckResult", "PlanResult", "acheck_dataframe", "check_dataframe", "plan_dataframe"]

REPORT_NAMES = ("submissions", "ai_results", "similarity_results", "similarity_sources", "cohort_matches")


@dataclass(eq=False)
class CheckResult(Mapping[str, "pd.DataFrame"]):
    """The four report tables of one run, as DataFrames (also usable as a dict by name).

    ``submissions`` has one row per DataFrame row (rejected rows with their reason);
    ``ai_results`` / ``similarity_results`` one row per requested product;
    ``similarity_sources`` one row per matched source. ``summary`` holds the counts.
    """

    submissions: pd.DataFrame
    ai_results: pd.DataFrame
    similarity_results: pd.DataFrame
    similarity_sources: pd.DataFrame
    cohort_matches: pd.DataFrame | None = None  # near-duplicate pairs (doccheck.matching)
    run_id: str | None = None
    campaign: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    #: The per-student wide table (``documents.parquet`` schema, see doccheck.outputs.instructor).
    documents: pd.DataFrame | None = None
    #: The run's ``report.html`` when reports were written (``out_dir`` or ``download``): a local
    #: path, or its location on a store when ``out_dir`` is a URL (``str()`` or ``doccheck.storage.display``).
    report_html: UserPath | None = None

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in REPORT_NAMES:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Any:
        return iter(REPORT_NAMES)

    def __len__(self) -> int:
        return len(REPORT_NAMES)

    @property
    def rejected(self) -> pd.DataFrame:
        """The rows that were not sent, with ``error_code`` and ``error_message``."""
        subs = self.submissions
        return subs[subs["status"] == "rejected"]

    def __repr__(self) -> str:
        counts = ", ".join(f"{n}={len(getattr(self, n))}" for n in REPORT_NAMES)
        return f"CheckResult(campaign={self.campaign!r}, run_id={self.run_id!r}, {counts})"


@dataclass(frozen=True)
class _Prepared:
    """Everything a run needs, checked before any event loop or thread starts.

    ``manifest`` is the temporary JSONL file of the DataFrame's rows: removed by
    :meth:`discard` once the run (or the plan) is over."""

    options: RunOptions
    manifest: str
    rows: int
    base_url: str = ""
    api_key: SecretStr | None = field(default=None, repr=False)
    write_files: bool = False  # out_dir or downloads: write the run folder as `doccheck run` does

    def discard(self) -> None:
        try:
            os.unlink(self.manifest)
        except FileNotFoundError:
            pass


def _prepare(
    df: pd.DataFrame,
    *,
    text_column: str | None,
    path_column: str | None,
    id_column: str,
    products: Sequence[str] | str,
    products_column: str | None,
    name_column: str | None,
    metadata_columns: Sequence[str],
    base_dir: str | os.PathLike[str] | None,
    campaign: str,
    base_url: str | None = None,
    api_key: str | SecretStr | None = None,
    database_url: str | None = None,
    download: Sequence[str] | str = (),
    templates: Sequence[str] = (),
    out_dir: str | os.PathLike[str] | None = None,
    needs_service: bool = True,
    **run_options: Any,
) -> _Prepared:
    """Check the call, write the rows as a manifest, build the run's options, find the service and key.

    Bad arguments and configuration raise here, in the caller's frame, as one short
    ``ValueError`` (``ConfigurationError`` for the service settings) that names the fix;
    bad ROWS never raise (they are the plan's rejections).
    """
    from doccheck.client import ConfigurationError
    from doccheck.config import load_settings

    base = Path(base_dir or os.getcwd()).resolve()
    columns = _resolve_columns(df, id_column=id_column, text_column=text_column, path_column=path_column,
                               products_column=products_column, name_column=name_column,
                               metadata_columns=metadata_columns)  # fmt: skip
    # the keyword arguments override the same settings the environment sets (a bad one: SettingsError)
    settings = load_settings(base_url=base_url, database_url=database_url, api_key=api_key or None)
    write_files = out_dir is not None or bool(download)
    folder = (
        display(resolve(out_dir))  # a folder, or a store's URL (refused here when it carries a credential)
        if out_dir is not None
        else tempfile.mkdtemp(prefix="doccheck-notebook-reports-")
        if write_files
        else None
    )
    options = RunOptions.from_flat(
        manifest="-", campaign=campaign, products=products, metadata_columns=list(columns.metadata),
        templates=list(templates), download=download, out_dir=folder, database_url=settings.ledger.database_url,
        base_url=settings.service.base_url, **run_options,
    )  # fmt: skip  # a wrong option raises (a ValueError) before anything is written
    key = settings.service.api_key
    if needs_service:
        if not settings.service.base_url:
            raise ConfigurationError(
                "no service address: set DOCCHECK_BASE_URL (or pass base_url=...), "
                "e.g. http://127.0.0.1:8790/api/v1 for a local `doccheck emulator`"
            )
        if key is None or not key.get_secret_value():
            raise ConfigurationError("no API key: set DOCCHECK_API_KEY in the environment (or pass api_key=...)")
    rows = _manifest_rows(df, columns, base_dir=base)
    manifest = _write_manifest(rows, base_dir=base, needs_base=columns.path is not None)
    options = options.model_copy(update={"source": options.source.model_copy(update={"manifest": manifest})})
    return _Prepared(options=options, manifest=manifest, rows=len(df), base_url=settings.service.base_url or "",
                     api_key=key, write_files=write_files)  # fmt: skip


class _DisplayObserver(RunObserver):
    """Feeds the notebook's progress line from the run's events."""

    def __init__(self, display: RunProgress) -> None:
        self.display = display

    async def prepared(self, prepared: Prepared) -> None:
        self.display.update(documents=prepared.documents, products=prepared.products, phase="submit")

    async def batches_done(self, total: BatchResult) -> None:
        self.display.update(cost_cents=total.cost_cents)

    def waiting(self) -> None:
        self.display.update(phase="wait")


async def _execute(prepared: _Prepared, *, display: RunProgress) -> CheckResult:
    """Run ``run_checks`` with the library's own steps, then read the tables back as DataFrames."""
    from doccheck.config import load_settings
    from doccheck.pipeline import open_service

    options = prepared.options
    settings = load_settings(base_url=prepared.base_url, database_url=options.connection.database_url)
    service = open_service(settings, concurrency=options.submission.concurrency, api_key=prepared.api_key,
                           check_access=False)  # fmt: skip  # _prepare checked the address's shape
    try:
        async with service as (ledger, client):
            steps = OverlappingLocalSteps(  # the manifest is sent while it is recorded, as `doccheck run`
                ledger, client, write_files=prepared.write_files,
                params=options.recorded("notebook", rows=prepared.rows),
                on_submit=lambda done: display.update(submitted=done),
                on_results=lambda done, total: display.update(finished=done, products=total),
            )  # fmt: skip
            summary = await run_checks(options, steps, _DisplayObserver(display))
            frames, documents = _read_back(ledger, summary, display)
    finally:
        display.close()
        prepared.discard()
    return CheckResult(**frames, run_id=summary.run_id, campaign=summary.campaign, summary=summary.model_dump(mode="json"),
                       documents=documents, report_html=resolve(summary.report_html) if summary.report_html else None)  # fmt: skip


def _read_back(ledger: Any, summary: RunSummary, display: RunProgress) -> tuple[dict[str, pd.DataFrame], Any]:
    """The run's tables as DataFrames, in the DataFrame's row order, and the wide table."""
    from doccheck.outputs import to_dataframes
    from doccheck.pipeline import report_tables

    run_id = summary.run_id
    assert run_id is not None
    counts = ledger.outcome_counts(run_id=run_id)
    display.update(finished=counts["completed"] + counts["failed"], products=counts["total"], phase="done")
    frames = to_dataframes(report_tables(ledger, run_id), metadata=ledger.document_metadata(run_id) or None)
    # in the DataFrame's order (the report lists accepted rows first, then rejected ones)
    frames["submissions"] = frames["submissions"].sort_values("row_number", kind="stable").reset_index(drop=True)
    return frames, _documents_frame(ledger, run_id, summary)


async def acheck_dataframe(
    df: pd.DataFrame,
    *,
    text_column: str | None = None,
    path_column: str | None = None,
    id_column: str = ID_COLUMN,
    products: Sequence[str] | str = tuple(DEFAULTS.source.products),
    products_column: str | None = None,
    name_column: str | None = None,
    metadata_columns: Sequence[str] = (),
    base_dir: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    api_key: str | SecretStr | None = None,
    campaign: str = "notebook",
    database_url: str | None = None,
    wait: bool = DEFAULTS.waiting.wait,
    timeout: float = DEFAULTS.waiting.timeout,
    grace_seconds: float = DEFAULTS.waiting.grace_seconds,
    poll_interval: float = DEFAULTS.waiting.poll_interval,
    concurrency: int = DEFAULTS.submission.concurrency,
    max_spend_cents: int | None = None,
    progress: bool | None = None,
    download: Sequence[str] | str = (),
    out_dir: str | os.PathLike[str] | None = None,
    templates: Sequence[str] = (),
    min_ai_words: int = DEFAULTS.output.min_ai_words,
    ai_band_elevated: float = DEFAULTS.output.ai_band_elevated,
    ai_band_high: float = DEFAULTS.output.ai_band_high,
    reference_campaign: str | None = None,
    max_false_flag_rate: float | None = None,
    group_by: str | None = None,
) -> CheckResult:
    """``await`` form of :func:`check_dataframe` (library pipeline, no Prefect)."""
    arguments = {k: v for k, v in locals().items() if k not in ("df", "progress")}
    prepared = _prepare(df, **arguments)
    return await _execute(prepared, display=progress_display(progress))


def _read_parquet(path: UserPath) -> pd.DataFrame:
    """A report file of the run folder (on the disk or a store) as a DataFrame of Arrow dtypes."""
    import pandas as pd
    import pyarrow.parquet as pq

    filesystem, where = arrow_filesystem(path)
    return pq.read_table(where, filesystem=filesystem).to_pandas(types_mapper=pd.ArrowDtype)


def _documents_frame(ledger: Any, run_id: str, summary: RunSummary) -> pd.DataFrame:
    """The per-student wide table: the run folder's ``documents.parquet`` when one was
    written, else built from the ledger's tables in memory."""
    import pandas as pd

    if summary.report_dir:
        return _read_parquet(resolve(summary.report_dir) / "documents.parquet")
    from doccheck.outputs import to_tables
    from doccheck.outputs.instructor import build_documents, documents_table, names_from_ledger
    from doccheck.pipeline import report_tables

    tables = to_tables(report_tables(ledger, run_id), ledger.document_metadata(run_id) or None)
    rows = {name: t.to_pylist() for name, t in tables.items()}
    wide = documents_table(build_documents(rows, names=names_from_ledger(ledger, run_id)))
    return wide.to_pandas(types_mapper=pd.ArrowDtype)


def _run_sync(coro_factory: Any) -> Any:
    """Run a coroutine to completion from sync code, also inside Jupyter's running loop
    (then in a worker thread with its own loop; the notebook cell simply blocks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_factory())
    context = contextvars.copy_context()  # settings held in context variables travel along
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="doccheck-notebook") as pool:
        return pool.submit(context.run, lambda: asyncio.run(coro_factory())).result()


def check_dataframe(
    df: pd.DataFrame,
    *,
    text_column: str | None = None,
    path_column: str | None = None,
    id_column: str = ID_COLUMN,
    products: Sequence[str] | str = tuple(DEFAULTS.source.products),
    products_column: str | None = None,
    name_column: str | None = None,
    metadata_columns: Sequence[str] = (),
    base_dir: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    api_key: str | SecretStr | None = None,
    campaign: str = "notebook",
    database_url: str | None = None,
    wait: bool = DEFAULTS.waiting.wait,
    timeout: float = DEFAULTS.waiting.timeout,
    grace_seconds: float = DEFAULTS.waiting.grace_seconds,
    poll_interval: float = DEFAULTS.waiting.poll_interval,
    concurrency: int = DEFAULTS.submission.concurrency,
    max_spend_cents: int | None = None,
    progress: bool | None = None,
    use_prefect: bool = False,
    api_key_block: str | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    download: Sequence[str] | str = (),
    templates: Sequence[str] = (),
    min_ai_words: int = DEFAULTS.output.min_ai_words,
    ai_band_elevated: float = DEFAULTS.output.ai_band_elevated,
    ai_band_high: float = DEFAULTS.output.ai_band_high,
    reference_campaign: str | None = None,
    max_false_flag_rate: float | None = None,
    group_by: str | None = None,
) -> CheckResult:
    """Check every row of ``df`` and return the report tables as DataFrames.

    - Columns: the manifest's own names are the defaults: ``document_id`` (unique ids),
      ``text`` (texts) and/or ``path`` (files relative to ``base_dir``), and, when present,
      ``products`` and ``name``. Other names: ``id_column``, ``text_column``,
      ``path_column``, ``products_column``, ``name_column``.
    - ``products``: ``("ai",)``, ``("similarity",)`` or both, for rows without their own.
      ``metadata_columns``: columns also sent to the service (none by default).
    - ``base_url`` / ``api_key`` / ``database_url`` default to ``DOCCHECK_BASE_URL`` /
      ``DOCCHECK_API_KEY`` / ``DOCCHECK_DATABASE_URL`` (ledger: ``sqlite:///doccheck.db``).
      The same ledger across calls is what makes a rerun free.
    - Waiting: when the account has a webhook endpoint, results are expected as events and
      a product is polled only after ``grace_seconds`` of silence; without one, results
      are polled from the start (soon, then less often, up to every ``poll_interval``).
      ``wait=False`` returns once everything is submitted; ``timeout`` bounds the wait.
    - ``progress``: a live line in Jupyter (a bar in a terminal); ``False`` for quiet.
    - ``use_prefect=True`` runs the ``bulk_check`` flow (visible in the Prefect UI; reports
      also written under ``out_dir``); the key then comes from ``api_key_block``, or
      ``api_key``/the environment handed to the flow as an unsaved ``DocCheckCredentials``
      block (never written into ``os.environ``).
    - ``download``: ``("similarity_pdf", "pdf", "original")`` or a subset fetches those
      files of finished checks into ``<out_dir>/<run>/files/`` (a temporary folder when no
      ``out_dir``); with ``out_dir`` or ``download`` the run folder also gets the Parquet
      reports, ``report.html`` and ``documents.csv`` (``result.report_html``).
      ``result.documents`` is always the per-student wide table.
    - ``templates``: files every student was given; local cohort matching ignores their text.
    - The page's rules, as ``doccheck run``'s flags (docs/instructor.md): ``min_ai_words`` (the length
      gate), ``ai_band_elevated``/``ai_band_high`` (the bands), ``reference_campaign`` (an earlier
      campaign of known-human work: the flags expected by chance), ``max_false_flag_rate`` (the flag
      threshold chosen by rate from it) and ``group_by`` (one page per value of a column).
      The pairs come back as ``cohort_matches`` (identical, near_duplicate, copied_section).

    Bad arguments raise ``ValueError`` and a missing service address or key raises
    ``ConfigurationError``, both before anything runs and naming the fix; bad ROWS never
    raise: they come back in ``submissions`` as ``rejected``. Use :func:`plan_dataframe`
    first to see what a run will send and cost.
    """
    # the call's own arguments are the run's options: passed on as one mapping, not re-listed
    arguments = {k: v for k, v in locals().items() if k not in ("df", "progress", "use_prefect", "api_key_block")}
    prepared = _prepare(df, **arguments, needs_service=not (use_prefect and api_key_block))
    if use_prefect:
        return _check_with_prefect(prepared, api_key_block=api_key_block)
    display = progress_display(progress)  # here: Jupyter ties the display to the running cell
    result: CheckResult = _run_sync(lambda: _execute(prepared, display=display))
    return result


@dataclass(eq=False)
class PlanResult:
    """What a run of the same DataFrame would send and cost, before anything is sent.

    ``documents``: one row per accepted row (``document_id``, ``row_number``, ``mode``,
    ``words``, ``products``, ``estimated_cost_cents``); ``rejected``: the rows that would
    not be sent and why. The estimate uses the service's published price rule; the
    service's own ``cost`` is what is charged.
    """

    documents: pd.DataFrame
    rejected: pd.DataFrame
    campaign: str
    estimated_cost_cents: int
    words: int

    def __repr__(self) -> str:
        return (
            f"PlanResult(campaign={self.campaign!r}, documents={len(self.documents)}, "
            f"rejected={len(self.rejected)}, words={self.words}, "
            f"estimated_cost=${self.estimated_cost_cents / 100:,.2f})"
        )


def plan_dataframe(
    df: pd.DataFrame,
    *,
    text_column: str | None = None,
    path_column: str | None = None,
    id_column: str = ID_COLUMN,
    products: Sequence[str] | str = tuple(DEFAULTS.source.products),
    products_column: str | None = None,
    name_column: str | None = None,
    metadata_columns: Sequence[str] = (),
    base_dir: str | os.PathLike[str] | None = None,
    campaign: str = "notebook",
) -> PlanResult:
    """The dry run of :func:`check_dataframe`: validate and plan every row, send nothing.

    Needs no service, key or ledger. Same arguments and defaults as ``check_dataframe``.
    """
    import pandas as pd

    from doccheck.pipeline import load_plan

    prepared = _prepare(df, text_column=text_column, path_column=path_column, id_column=id_column, products=products,
                        products_column=products_column, name_column=name_column, metadata_columns=metadata_columns,
                        base_dir=base_dir, campaign=campaign, needs_service=False)  # fmt: skip
    source = prepared.options.source
    try:
        plan = load_plan(source.manifest, campaign=source.campaign, products=source.products,
                         metadata_columns=source.metadata_columns)  # fmt: skip
    finally:
        prepared.discard()
    documents = pd.DataFrame(
        [
            {
                "document_id": d.document_id,
                "row_number": d.row_number,
                "mode": d.mode,
                "words": d.words,
                "products": ";".join(d.products),
                "estimated_cost_cents": d.estimated_cost_cents,
            }  # fmt: skip
            for d in plan.documents
        ],
        columns=["document_id", "row_number", "mode", "words", "products", "estimated_cost_cents"],
    )
    rejected = pd.DataFrame(
        [
            {
                "document_id": r.document_id,
                "row_number": r.row_number,
                "field": r.field,
                "error_code": r.code,
                "error_message": r.reason,
            }  # fmt: skip
            for r in plan.rejections
        ],
        columns=["document_id", "row_number", "field", "error_code", "error_message"],
    )
    return PlanResult(documents=documents, rejected=rejected, campaign=plan.campaign,
                      estimated_cost_cents=plan.estimated_cost_cents(), words=plan.total_words())  # fmt: skip


def _check_with_prefect(prepared: _Prepared, *, api_key_block: str | None) -> CheckResult:
    """Run the ``bulk_check`` flow on the prepared manifest and read its reports back.

    The key travels as an unsaved ``DocCheckCredentials`` block (its ``SecretStr`` is
    masked wherever Prefect serialises parameters), never through the environment."""

    from doccheck.outputs import REPORT_FILES, SCHEMAS
    from doccheck.pipeline import prefect_integration

    options = prepared.options
    if options.output.out_dir == DEFAULTS.output.out_dir and not prepared.write_files:
        folder = tempfile.mkdtemp(prefix="doccheck-notebook-reports-")
        options = options.model_copy(update={"output": options.output.model_copy(update={"out_dir": folder})})
    credentials: Any = None
    if not api_key_block and prepared.api_key is not None:
        credentials = prefect_integration().credentials(prepared.base_url, prepared.api_key)

    def run() -> Any:  # the seam `doccheck run` uses: the integration found by its entry point
        flow_run = prefect_integration().bulk_check(
            **options.flow_parameters(), credentials=credentials, api_key_block=api_key_block
        )
        return asyncio.run(flow_run)

    try:
        # A fresh thread (Jupyter's loop may be running here) with this thread's context, so
        # Prefect's settings context (e.g. a temporary PREFECT_API_URL) applies to the flow.
        context = contextvars.copy_context()
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            summary = pool.submit(context.run, run).result()
    finally:
        prepared.discard()
    run_dir = resolve(summary.report_dir)  # a folder, or a URL when out_dir is one
    frames = {name: _read_parquet(run_dir / REPORT_FILES[name]) for name in SCHEMAS}
    documents_path = run_dir / "documents.parquet"
    documents = _read_parquet(documents_path) if documents_path.is_file() else None
    return CheckResult(**frames, run_id=summary.run_id, campaign=summary.campaign, summary=summary.model_dump(mode="json"),
                       documents=documents, report_html=resolve(summary.report_html) if summary.report_html else None)  # fmt: skip
