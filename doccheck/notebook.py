"""The notebook API: check a pandas DataFrame of texts or file paths, get DataFrames back.

Why: data teams live in notebooks. ``check_dataframe(df)`` does what ``doccheck run`` does:
validate every row, submit with deterministic Idempotency-Keys recorded in the ledger (a
rerun of the same cell charges nothing), wait for results; and returns the four report
tables as DataFrames with the SAME schemas as the Parquet reports
(``doccheck.reports.to_dataframes``). ``plan_dataframe(df)`` is the dry run (what would be
sent and what it would cost). No Prefect needed: the library pipeline is called directly.
``use_prefect=True`` runs the ``bulk_check`` flow instead, for a run that shows in the
Prefect UI.

The DataFrame's columns are read by the manifest's own names (``document_id``, ``text``,
``path``, ``products``, ``name``) unless told otherwise. Everything that can be wrong with
the call itself (a missing column, no API key) raises before any thread or event loop
starts, so a notebook shows one short error naming the fix, not a page of asyncio frames.

Jupyter already runs an event loop, where ``asyncio.run`` is refused; the sync
:func:`check_dataframe` therefore runs the work in a worker thread with its own loop when a
loop is running, and :func:`acheck_dataframe` is there for ``await`` in async code. Progress
is a live line in Jupyter (``doccheck.notebook_progress``).

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
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from doccheck.notebook_progress import RunProgress, progress_display

if TYPE_CHECKING:  # pandas is imported lazily: `import doccheck` stays light
    import pandas as pd

    from doccheck.pipeline.progress import Progress
    from doccheck.planning import Plan

__all__ = ["CheckResult", "PlanResult", "acheck_dataframe", "check_dataframe", "plan_dataframe"]

REPORT_NAMES = ("submissions", "ai_results", "similarity_results", "similarity_sources", "cohort_matches")

# The manifest's column names (docs/manifest.md): the defaults for a DataFrame's columns.
ID_COLUMN, TEXT_COLUMN, PATH_COLUMN, PRODUCTS_COLUMN, NAME_COLUMN = "document_id", "text", "path", "products", "name"
RESERVED_COLUMNS = (ID_COLUMN, TEXT_COLUMN, PATH_COLUMN, PRODUCTS_COLUMN, NAME_COLUMN)
SUBMIT_CHUNK = 100  # documents per submit call: the progress line's cost moves at this step


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
    #: The per-student wide table (``documents.parquet`` schema, see doccheck.instructor).
    documents: pd.DataFrame | None = None
    #: The run's ``report.html`` when reports were written (``out_dir`` or ``download``).
    report_html: Path | None = None

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


def _json_value(value: Any) -> Any:
    """A cell as JSON: missing values (None, NaN, NA) are null; lists stay lists; other
    non-JSON scalars (numpy numbers, timestamps) become their string."""
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


@dataclass(frozen=True)
class _Columns:
    """Which DataFrame column plays which manifest part (None: not used)."""

    id: str
    text: str | None
    path: str | None
    products: str | None
    name: str | None
    metadata: tuple[str, ...]


def _resolve_columns(
    df: pd.DataFrame,
    *,
    id_column: str,
    text_column: str | None,
    path_column: str | None,
    products_column: str | None,
    name_column: str | None,
    metadata_columns: Sequence[str],
) -> _Columns:
    """The columns to read, the manifest's own names (``document_id``, ``text``, ``path``,
    ``products``, ``name``) being the defaults. Raises ``ValueError`` naming the fix."""
    columns = [str(c) for c in df.columns]
    listing = ", ".join(columns) or "none"
    if id_column not in columns:
        raise ValueError(
            f"the DataFrame has no {id_column!r} column: pass id_column='<the column of unique ids>' "
            f"(columns: {listing})"
        )
    if text_column is None and path_column is None:
        text_column = TEXT_COLUMN if TEXT_COLUMN in columns else None
        path_column = PATH_COLUMN if PATH_COLUMN in columns else None
        if text_column is None and path_column is None:
            raise ValueError(
                "no column of texts or file paths: name one with text_column='...' or path_column='...', "
                f"or call it 'text' or 'path' (columns: {listing})"
            )
    if products_column is None and PRODUCTS_COLUMN in columns:
        products_column = PRODUCTS_COLUMN
    if name_column is None and NAME_COLUMN in columns:
        name_column = NAME_COLUMN
    given = {"text_column": text_column, "path_column": path_column, "products_column": products_column,
             "name_column": name_column}  # fmt: skip
    for arg, column in given.items():
        if column is not None and column not in columns:
            raise ValueError(f"{arg}={column!r} is not a column of the DataFrame (columns: {listing})")
    reserved = {id_column, *(c for c in given.values() if c)} | set(RESERVED_COLUMNS)
    for column in metadata_columns:
        if column not in columns:
            raise ValueError(f"metadata column {column!r} is not a column of the DataFrame (columns: {listing})")
        if column in reserved:
            raise ValueError(f"metadata column {column!r} is also a manifest column; rename it first")
    return _Columns(id_column, text_column, path_column, products_column, name_column, tuple(metadata_columns))


def _manifest_rows(df: pd.DataFrame, columns: _Columns, *, base_dir: Path) -> list[dict[str, Any]]:
    """The DataFrame as manifest rows (``document_id``, ``text`` | ``path``, ...)."""
    rows: list[dict[str, Any]] = []
    for record in df.to_dict(orient="records"):
        row: dict[str, Any] = {"document_id": _json_value(record[columns.id])}
        if row["document_id"] is not None and not isinstance(row["document_id"], str):
            row["document_id"] = str(row["document_id"])
        if columns.text is not None:
            row["text"] = _json_value(record[columns.text])
        if columns.path is not None:
            raw = _json_value(record[columns.path])
            if isinstance(raw, str) and raw.strip() and os.path.isabs(raw.strip()):
                # absolute paths inside base_dir become relative; others are rejected by validation
                try:
                    raw = os.path.relpath(raw.strip(), base_dir)
                except ValueError:
                    pass
            row["path"] = raw
        if columns.products is not None:
            row["products"] = _json_value(record[columns.products])
        if columns.name is not None:
            row["name"] = _json_value(record[columns.name])
        for column in columns.metadata:
            value = _json_value(record[column])
            row[column] = None if value is None else str(value)
        rows.append(row)
    return rows


def _load_plan(rows: list[dict[str, Any]], *, base_dir: Path, needs_base: bool, campaign: str,
               products: Sequence[str], metadata_columns: Sequence[str]) -> Plan:  # fmt: skip
    """Validate and plan the rows through a temporary JSONL manifest (line N = row N)."""
    from doccheck.planning import load_plan

    folder = base_dir if needs_base else Path(tempfile.gettempdir())
    handle, name = tempfile.mkstemp(prefix=".doccheck-notebook-", suffix=".jsonl", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row) + "\n")  # ASCII escapes: a lone surrogate reaches validation
        return load_plan(name, campaign=campaign, products=list(products), metadata_columns=list(metadata_columns))
    finally:
        os.unlink(name)


@dataclass(frozen=True)
class _Prepared:
    """Everything a run needs, checked before any event loop or thread starts."""

    plan: Plan
    rows: int
    products: list[str]
    database_url: str
    base_url: str = ""
    api_key: SecretStr | None = field(default=None, repr=False)
    download: tuple[str, ...] = ()  # kinds of the service's files to fetch (doccheck.downloads)
    templates: tuple[str, ...] = ()  # files every student was given (cohort matching ignores them)


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
    needs_service: bool = True,
) -> _Prepared:
    """Check the call, validate and plan every row, find the service and the key.

    Bad arguments and configuration raise here, in the caller's frame, as one short
    ``ValueError`` (``ConfigurationError`` for the service settings) that names the fix;
    bad ROWS never raise (they are the plan's rejections).
    """
    from doccheck.client import ConfigurationError
    from doccheck.config import load_settings
    from doccheck.downloads import parse_kinds

    kinds = tuple(parse_kinds(download))
    product_list = [p.strip() for p in products.split(",")] if isinstance(products, str) else list(products)
    base = Path(base_dir or os.getcwd()).resolve()
    columns = _resolve_columns(df, id_column=id_column, text_column=text_column, path_column=path_column,
                               products_column=products_column, name_column=name_column,
                               metadata_columns=metadata_columns)  # fmt: skip
    rows = _manifest_rows(df, columns, base_dir=base)
    plan = _load_plan(rows, base_dir=base, needs_base=columns.path is not None, campaign=campaign,
                      products=product_list, metadata_columns=columns.metadata)  # fmt: skip
    settings = load_settings(base_url=base_url, database_url=database_url)
    if not needs_service:
        return _Prepared(plan=plan, rows=len(df), products=product_list, database_url=settings.database_url)
    key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key) if api_key else settings.api_key
    if not settings.base_url:
        raise ConfigurationError(
            "no service address: set DOCCHECK_BASE_URL (or pass base_url=...), "
            "e.g. http://127.0.0.1:8790/api/v1 for a local `doccheck emulator`"
        )
    if key is None or not key.get_secret_value():
        raise ConfigurationError("no API key: set DOCCHECK_API_KEY in the environment (or pass api_key=...)")
    from doccheck.client import DocCheckClient

    DocCheckClient(settings.base_url, key.get_secret_value()).close()  # checks the address's shape, sends nothing
    return _Prepared(plan=plan, rows=len(df), products=product_list, database_url=settings.database_url,
                     base_url=settings.base_url, api_key=key, download=kinds, templates=tuple(templates))  # fmt: skip


async def _execute(
    prepared: _Prepared,
    *,
    wait: bool,
    timeout: float,
    grace_seconds: float,
    poll_interval: float,
    concurrency: int,
    max_spend_cents: int | None,
    display: RunProgress,
    out_dir: str | os.PathLike[str] | None = None,
) -> CheckResult:
    """Record the run, submit in chunks, wait for the results, read the tables back (and,
    with ``out_dir`` or downloads, write the run folder as ``doccheck run`` does)."""
    from doccheck.client import AsyncDocCheckClient
    from doccheck.ledger import Ledger
    from doccheck.matching import match_plan, summary_of
    from doccheck.pipeline import BatchResult, Budget, apply_events, report_tables, submit_batch, wait_for_results
    from doccheck.reports import to_dataframes

    plan = prepared.plan
    documents = plan.documents
    product_count = sum(len(doc.products) for doc in documents)
    display.update(documents=len(documents), products=product_count, phase="submit")
    ledger = Ledger(prepared.database_url)
    try:
        run_id = ledger.start_run(
            campaign=plan.campaign, manifest="<DataFrame>", products=sorted({p for d in documents for p in d.products}),
            params={"source": "notebook", "rows": prepared.rows, "products": prepared.products, "wait": wait},
        )  # fmt: skip
        ledger.record_documents(run_id, documents)
        ledger.record_rejections(run_id, plan.rejections)
        cohort = match_plan(
            plan, run_id=run_id, ledger=ledger, templates=prepared.templates
        )  # local pairs, before paying
        budget = Budget(max_spend_cents) if max_spend_cents is not None else None
        assert prepared.api_key is not None  # _prepare(needs_service=True) guarantees it
        async with AsyncDocCheckClient(prepared.base_url, prepared.api_key.get_secret_value()) as client:
            batch = BatchResult()
            for start in range(0, len(documents), SUBMIT_CHUNK):
                chunk = documents[start : start + SUBMIT_CHUNK]

                def on_submit(p: Progress, offset: int = start) -> None:
                    display.update(submitted=offset + p.done)

                done = await submit_batch(client, ledger, run_id, chunk, concurrency=concurrency, budget=budget,
                                          on_progress=on_submit)  # fmt: skip
                batch = batch.merge(done)
                display.update(submitted=start + len(chunk), cost_cents=batch.cost_cents)
            waited = None
            display.update(phase="wait")
            if wait and documents:
                waited = await wait_for_results(
                    client, ledger, run_id, timeout=timeout, grace_seconds=grace_seconds,
                    poll_interval=poll_interval, on_progress=lambda p: display.update(finished=p.done, products=p.total),
                )  # fmt: skip
            else:
                apply_events(ledger)
        counts = ledger.outcome_counts(run_id=run_id)
        display.update(finished=counts["completed"] + counts["failed"], products=counts["total"], phase="done")
        pending = counts["pending"]
        summary = {
            "documents": len(documents),
            "rejected": len(plan.rejections),
            "submitted": batch.submitted,
            "reused": batch.replayed + batch.already_done,
            "failed": batch.failed,
            "skipped_budget": batch.skipped_budget,
            "spent_cents": batch.cost_cents,
            **{
                k: v
                for k, v in ledger.run_summary(run_id).items()
                if k in ("checks", "charged_cents", "refunded_cents", "net_cents")
            },  # fmt: skip
            "completed": counts["completed"],
            "failed_products": counts["failed"],
            "pending": pending,
            "timed_out": bool(waited and waited.timed_out),
            "unsent_retry_later": batch.retry_later,
            "in_flight_elsewhere": batch.in_flight_elsewhere,
            "cohort_matches": summary_of(cohort),
        }
        status = "incomplete" if batch.incomplete else ("finished" if pending == 0 else "pending")
        ledger.finish_run(run_id, status=status, summary=summary)
        frames = to_dataframes(report_tables(ledger, run_id), metadata=plan.metadata_by_document() or None)
        # in the DataFrame's order (the report lists accepted rows first, then rejected ones)
        frames["submissions"] = frames["submissions"].sort_values("row_number", kind="stable").reset_index(drop=True)
        documents, report_html, downloads = await _instructor_outputs(
            ledger, run_id, prepared, kinds=prepared.download, out_dir=out_dir, concurrency=concurrency
        )
        if downloads is not None:
            summary["downloads"] = downloads
    finally:
        ledger.close()
        display.close()
    return CheckResult(**frames, run_id=run_id, campaign=plan.campaign, summary=summary, documents=documents,
                       report_html=report_html)  # fmt: skip


async def acheck_dataframe(
    df: pd.DataFrame,
    *,
    text_column: str | None = None,
    path_column: str | None = None,
    id_column: str = ID_COLUMN,
    products: Sequence[str] | str = ("ai",),
    products_column: str | None = None,
    name_column: str | None = None,
    metadata_columns: Sequence[str] = (),
    base_dir: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    api_key: str | SecretStr | None = None,
    campaign: str = "notebook",
    database_url: str | None = None,
    wait: bool = True,
    timeout: float = 600,
    grace_seconds: float = 30,
    poll_interval: float = 2,
    concurrency: int = 8,
    max_spend_cents: int | None = None,
    progress: bool | None = None,
    download: Sequence[str] | str = (),
    out_dir: str | os.PathLike[str] | None = None,
    templates: Sequence[str] = (),
) -> CheckResult:
    """``await`` form of :func:`check_dataframe` (library pipeline, no Prefect)."""
    prepared = _prepare(df, text_column=text_column, path_column=path_column, id_column=id_column, products=products,
                        products_column=products_column, name_column=name_column, metadata_columns=metadata_columns,
                        base_dir=base_dir, campaign=campaign, base_url=base_url, api_key=api_key,
                        database_url=database_url, download=download, templates=templates)  # fmt: skip
    return await _execute(prepared, wait=wait, timeout=timeout, grace_seconds=grace_seconds,
                          poll_interval=poll_interval, concurrency=concurrency, max_spend_cents=max_spend_cents,
                          display=progress_display(progress), out_dir=out_dir)  # fmt: skip


async def _instructor_outputs(ledger: Any, run_id: str, prepared: _Prepared, *, kinds: Sequence[str],
                              out_dir: str | os.PathLike[str] | None,
                              concurrency: int) -> tuple[pd.DataFrame, Path | None, dict[str, Any] | None]:  # fmt: skip
    """The wide table; with ``out_dir`` or ``download``, also the run folder (Parquet reports,
    files, report.html, documents.csv) as ``doccheck run`` writes it."""
    import pandas as pd

    from doccheck.client import AsyncDocCheckClient
    from doccheck.instructor import build_documents, documents_table, names_from_ledger
    from doccheck.instructor.outputs import write_run_outputs
    from doccheck.pipeline import report_tables
    from doccheck.reports import run_label, to_tables, write_reports

    plan = prepared.plan
    tables = report_tables(ledger, run_id)
    metadata = plan.metadata_by_document() or None
    if not kinds and out_dir is None:
        rows = {name: t.to_pylist() for name, t in to_tables(tables, metadata).items()}
        wide = documents_table(build_documents(rows, names=names_from_ledger(ledger, run_id)))
        return wide.to_pandas(types_mapper=pd.ArrowDtype), None, None
    folder = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="doccheck-notebook-reports-"))
    label = run_label(plan.campaign, run_id)
    paths = write_reports(folder, label, tables, metadata=metadata)
    if kinds:
        assert prepared.api_key is not None
        async with AsyncDocCheckClient(prepared.base_url, prepared.api_key.get_secret_value()) as client:
            outputs = await write_run_outputs(paths.run_dir, paths.latest_dir, campaign=plan.campaign, run_id=run_id,
                                              ledger=ledger, client=client, download=kinds,
                                              download_concurrency=min(concurrency, 8))  # fmt: skip
    else:
        outputs = await write_run_outputs(paths.run_dir, paths.latest_dir, campaign=plan.campaign, run_id=run_id,
                                          ledger=ledger)  # fmt: skip
    import pyarrow.parquet as pq

    wide_frame = pq.read_table(outputs.paths.documents_parquet).to_pandas(types_mapper=pd.ArrowDtype)
    downloads = outputs.downloads.as_dict() if outputs.downloads is not None else None
    return wide_frame, outputs.paths.report_html, downloads


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
    products: Sequence[str] | str = ("ai",),
    products_column: str | None = None,
    name_column: str | None = None,
    metadata_columns: Sequence[str] = (),
    base_dir: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    api_key: str | SecretStr | None = None,
    campaign: str = "notebook",
    database_url: str | None = None,
    wait: bool = True,
    timeout: float = 600,
    grace_seconds: float = 30,
    poll_interval: float = 2,
    concurrency: int = 8,
    max_spend_cents: int | None = None,
    progress: bool | None = None,
    use_prefect: bool = False,
    api_key_block: str | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    download: Sequence[str] | str = (),
    templates: Sequence[str] = (),
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
      also written under ``out_dir``); the key then comes from ``api_key_block`` or the
      environment (``api_key`` is set in this process's environment for the flow only).
    - ``download``: ``("similarity_pdf", "pdf", "original")`` or a subset fetches those
      files of finished checks into ``<out_dir>/<run>/files/`` (a temporary folder when no
      ``out_dir``); with ``out_dir`` or ``download`` the run folder also gets the Parquet
      reports, ``report.html`` and ``documents.csv`` (``result.report_html``).
      ``result.documents`` is always the per-student wide table.
    - ``templates``: files every student was given; local cohort matching ignores their text.
      The pairs come back as ``cohort_matches`` (identical, near_duplicate, copied_section).

    Bad arguments raise ``ValueError`` and a missing service address or key raises
    ``ConfigurationError``, both before anything runs and naming the fix; bad ROWS never
    raise: they come back in ``submissions`` as ``rejected``. Use :func:`plan_dataframe`
    first to see what a run will send and cost.
    """
    if use_prefect:
        return _check_with_prefect(
            df, text_column=text_column, path_column=path_column, id_column=id_column, products=products,
            products_column=products_column, name_column=name_column, metadata_columns=metadata_columns,
            base_dir=base_dir, base_url=base_url, api_key=api_key, api_key_block=api_key_block, campaign=campaign,
            database_url=database_url, wait=wait, timeout=timeout, grace_seconds=grace_seconds,
            poll_interval=poll_interval, concurrency=concurrency, max_spend_cents=max_spend_cents, out_dir=out_dir,
            download=download, templates=templates,
        )  # fmt: skip
    prepared = _prepare(df, text_column=text_column, path_column=path_column, id_column=id_column, products=products,
                        products_column=products_column, name_column=name_column, metadata_columns=metadata_columns,
                        base_dir=base_dir, campaign=campaign, base_url=base_url, api_key=api_key,
                        database_url=database_url, download=download, templates=templates)  # fmt: skip
    display = progress_display(progress)  # here: Jupyter ties the display to the running cell
    result: CheckResult = _run_sync(
        lambda: _execute(
            prepared,
            wait=wait,
            timeout=timeout,
            grace_seconds=grace_seconds,
            poll_interval=poll_interval,
            concurrency=concurrency,
            max_spend_cents=max_spend_cents,
            display=display,
            out_dir=out_dir,
        )  # fmt: skip
    )
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
    products: Sequence[str] | str = ("ai",),
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

    prepared = _prepare(df, text_column=text_column, path_column=path_column, id_column=id_column, products=products,
                        products_column=products_column, name_column=name_column, metadata_columns=metadata_columns,
                        base_dir=base_dir, campaign=campaign, needs_service=False)  # fmt: skip
    plan = prepared.plan
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


def _check_with_prefect(df: pd.DataFrame, *, text_column: str | None, path_column: str | None, id_column: str,
                        products: Sequence[str] | str, products_column: str | None, name_column: str | None,
                        metadata_columns: Sequence[str], base_dir: str | os.PathLike[str] | None,
                        base_url: str | None, api_key: str | SecretStr | None, api_key_block: str | None,
                        campaign: str, database_url: str | None, wait: bool, timeout: float, grace_seconds: float,
                        poll_interval: float, concurrency: int, max_spend_cents: int | None,
                        out_dir: str | os.PathLike[str] | None,
                        download: Sequence[str] | str = (), templates: Sequence[str] = ()) -> CheckResult:  # fmt: skip
    """Run the ``bulk_check`` flow on a temporary manifest and read its reports back."""
    import pyarrow.parquet as pq

    from doccheck.reports import REPORT_FILES, SCHEMAS

    base = Path(base_dir or os.getcwd()).resolve()
    columns = _resolve_columns(df, id_column=id_column, text_column=text_column, path_column=path_column,
                               products_column=products_column, name_column=name_column,
                               metadata_columns=metadata_columns)  # fmt: skip
    rows = _manifest_rows(df, columns, base_dir=base)
    folder = base if columns.path is not None else Path(tempfile.mkdtemp(prefix="doccheck-notebook-"))
    handle, manifest = tempfile.mkstemp(prefix=".doccheck-notebook-", suffix=".jsonl", dir=folder)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")  # ASCII escapes: a lone surrogate reaches validation
    reports = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="doccheck-notebook-reports-"))
    key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
    previous = os.environ.get("DOCCHECK_API_KEY")

    def run() -> Any:
        from prefect_doccheck.flows.bulk_check import bulk_check  # lazy: the library never imports prefect

        return asyncio.run(
            bulk_check(
                manifest=manifest,
                products=[products] if isinstance(products, str) else list(products),
                out_dir=str(reports),
                campaign=campaign,
                concurrency=concurrency,
                wait=wait,
                wait_timeout=timeout,
                max_spend_cents=max_spend_cents,
                metadata_columns=list(columns.metadata),
                base_url=base_url,
                database_url=database_url,
                grace_seconds=grace_seconds,
                poll_interval=poll_interval,
                api_key_block=api_key_block,
                download=download if isinstance(download, str) else list(download),
                templates=list(templates),
            )  # fmt: skip
        )

    try:
        if key and not api_key_block:
            os.environ["DOCCHECK_API_KEY"] = key
        # A fresh thread (Jupyter's loop may be running here) with this thread's context, so
        # Prefect's settings context (e.g. a temporary PREFECT_API_URL) applies to the flow.
        context = contextvars.copy_context()
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            summary = pool.submit(context.run, run).result()
    finally:
        os.unlink(manifest)
        if key and not api_key_block:
            if previous is None:
                os.environ.pop("DOCCHECK_API_KEY", None)
            else:
                os.environ["DOCCHECK_API_KEY"] = previous
    import pandas as pd

    run_dir = Path(summary.report_dir)
    frames = {
        name: pq.read_table(run_dir / REPORT_FILES[name]).to_pandas(types_mapper=pd.ArrowDtype) for name in SCHEMAS
    }
    documents_path = run_dir / "documents.parquet"
    documents = (
        pq.read_table(documents_path).to_pandas(types_mapper=pd.ArrowDtype) if documents_path.is_file() else None
    )
    return CheckResult(**frames, run_id=summary.run_id, campaign=summary.campaign, summary=summary.model_dump(mode="json"),
                       documents=documents, report_html=Path(summary.report_html) if summary.report_html else None)  # fmt: skip
