"""The notebook API: check a pandas DataFrame of texts or file paths, get DataFrames back.

Why: data teams live in notebooks. ``check_dataframe(df, text_column="answer")`` does what
``doccheck run`` does — validate every row, submit with deterministic Idempotency-Keys
recorded in the ledger (a rerun of the same cell charges nothing), wait for results — and
returns the four report tables as DataFrames with the SAME schemas as the Parquet reports
(``doccheck.reports.to_dataframes``). No Prefect needed: the library pipeline is called
directly. ``use_prefect=True`` runs the ``bulk_check`` flow instead, for a run that shows
in the Prefect UI.

Jupyter already runs an event loop, where ``asyncio.run`` is refused; the sync
:func:`check_dataframe` therefore runs the work in a worker thread with its own loop when a
loop is running, and :func:`acheck_dataframe` is there for ``await`` in async code.

Rows are validated exactly like manifest rows (the DataFrame is written to a temporary
JSONL manifest): a bad row is rejected with a reason naming the row — its 1-based position
in the DataFrame — and never sinks the others. File paths are relative to ``base_dir``
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

if TYPE_CHECKING:  # pandas is imported lazily: `import doccheck` stays light
    import pandas as pd

__all__ = ["CheckResult", "acheck_dataframe", "check_dataframe"]

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


def _manifest_rows(
    df: pd.DataFrame,
    *,
    text_column: str | None,
    path_column: str | None,
    id_column: str,
    products_column: str | None,
    name_column: str | None,
    metadata_columns: Sequence[str],
    base_dir: Path,
) -> list[dict[str, Any]]:
    """The DataFrame as manifest rows (``document_id``, ``text`` | ``path``, ...)."""
    if text_column is None and path_column is None:
        raise ValueError("give text_column (a column of texts) or path_column (a column of file paths)")
    wanted = {"id_column": id_column, "text_column": text_column, "path_column": path_column,
              "products_column": products_column, "name_column": name_column}  # fmt: skip
    for arg, column in wanted.items():
        if column is not None and column not in df.columns:
            raise ValueError(f"{arg}={column!r} is not a column of the DataFrame (columns: {', '.join(map(str, df.columns))})")
    reserved = {"document_id", "text", "path", "products", "name"}
    for column in metadata_columns:
        if column not in df.columns:
            raise ValueError(f"metadata column {column!r} is not a column of the DataFrame")
        if column in reserved:
            raise ValueError(f"metadata column {column!r} clashes with a manifest column; rename it first")
    rows: list[dict[str, Any]] = []
    for record in df.to_dict(orient="records"):
        row: dict[str, Any] = {"document_id": _json_value(record[id_column])}
        if row["document_id"] is not None and not isinstance(row["document_id"], str):
            row["document_id"] = str(row["document_id"])
        if text_column is not None:
            row["text"] = _json_value(record[text_column])
        if path_column is not None:
            raw = _json_value(record[path_column])
            if isinstance(raw, str) and raw.strip() and os.path.isabs(raw.strip()):
                # absolute paths inside base_dir become relative; others are rejected by validation
                try:
                    raw = os.path.relpath(raw.strip(), base_dir)
                except ValueError:
                    pass
            row["path"] = raw
        if products_column is not None:
            row["products"] = _json_value(record[products_column])
        if name_column is not None:
            row["name"] = _json_value(record[name_column])
        for column in metadata_columns:
            value = _json_value(record[column])
            row[column] = None if value is None else str(value)
        rows.append(row)
    return rows


def _load_plan(rows: list[dict[str, Any]], *, base_dir: Path, needs_base: bool, campaign: str,
               products: Sequence[str], metadata_columns: Sequence[str]) -> Any:  # fmt: skip
    """Validate and plan the rows through a temporary JSONL manifest (line N = row N)."""
    from doccheck.planning import load_plan

    folder = base_dir if needs_base else Path(tempfile.gettempdir())
    handle, name = tempfile.mkstemp(prefix=".doccheck-notebook-", suffix=".jsonl", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return load_plan(name, campaign=campaign, products=list(products), metadata_columns=list(metadata_columns))
    finally:
        os.unlink(name)


async def acheck_dataframe(
    df: pd.DataFrame,
    *,
    text_column: str | None = None,
    path_column: str | None = None,
    id_column: str = "document_id",
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
    templates: Sequence[str] = (),
) -> CheckResult:
    """``await`` form of :func:`check_dataframe` (library pipeline, no Prefect)."""
    from doccheck.client import AsyncDocCheckClient
    from doccheck.config import load_settings
    from doccheck.ledger import Ledger
    from doccheck.matching import match_plan, summary_of
    from doccheck.pipeline import Budget, apply_events, report_tables, submit_batch, wait_for_results
    from doccheck.reports import to_dataframes

    product_list = [products] if isinstance(products, str) else list(products)
    base = Path(base_dir or os.getcwd()).resolve()
    rows = _manifest_rows(df, text_column=text_column, path_column=path_column, id_column=id_column,
                          products_column=products_column, name_column=name_column,
                          metadata_columns=metadata_columns, base_dir=base)  # fmt: skip
    plan = _load_plan(rows, base_dir=base, needs_base=path_column is not None, campaign=campaign,
                      products=product_list, metadata_columns=metadata_columns)  # fmt: skip
    settings = load_settings(base_url=base_url, database_url=database_url)
    key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
    ledger = Ledger(settings.database_url)
    try:
        run_id = ledger.start_run(
            campaign=plan.campaign, manifest="<DataFrame>", products=sorted({p for d in plan.documents for p in d.products}),
            params={"source": "notebook", "rows": len(df), "products": product_list, "wait": wait},
        )  # fmt: skip
        ledger.record_documents(run_id, plan.documents)
        ledger.record_rejections(run_id, plan.rejections)
        cohort = match_plan(plan, run_id=run_id, ledger=ledger, templates=templates)  # local pairs, before paying
        budget = Budget(max_spend_cents) if max_spend_cents is not None else None
        async with AsyncDocCheckClient(settings.base_url, key) as client:
            batch = await submit_batch(client, ledger, run_id, plan.documents, concurrency=concurrency, budget=budget)
            waited = None
            if wait and plan.documents:
                waited = await wait_for_results(client, ledger, run_id, timeout=timeout, grace_seconds=grace_seconds,
                                                poll_interval=poll_interval)  # fmt: skip
            else:
                apply_events(ledger)
        pending = len(ledger.pending_outcomes(run_id=run_id))
        summary = {
            "documents": len(plan.documents),
            "rejected": len(plan.rejections),
            "submitted": batch.submitted,
            "reused": batch.replayed + batch.already_done,
            "failed": batch.failed,
            "skipped_budget": batch.skipped_budget,
            "spent_cents": batch.cost_cents,
            "pending": pending,
            "timed_out": bool(waited and waited.timed_out),
            "cohort_matches": summary_of(cohort),
        }
        ledger.finish_run(run_id, status="finished" if pending == 0 else "pending", summary=summary)
        frames = to_dataframes(report_tables(ledger, run_id), metadata=plan.metadata_by_document() or None)
        # in the DataFrame's order (the report lists accepted rows first, then rejected ones)
        frames["submissions"] = frames["submissions"].sort_values("row_number", kind="stable").reset_index(drop=True)
    finally:
        ledger.close()
    return CheckResult(**frames, run_id=run_id, campaign=plan.campaign, summary=summary)


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
    id_column: str = "document_id",
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
    use_prefect: bool = False,
    api_key_block: str | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    templates: Sequence[str] = (),
) -> CheckResult:
    """Check every row of ``df`` and return the report tables as DataFrames.

    - ``text_column`` (texts) or ``path_column`` (files relative to ``base_dir``), and
      ``id_column`` (unique ids; default ``document_id``).
    - ``products``: ``("ai",)``, ``("similarity",)`` or both, for rows without their own
      (``products_column``). ``metadata_columns``: columns also sent to the service.
    - ``base_url`` / ``api_key`` / ``database_url`` default to ``DOCCHECK_BASE_URL`` /
      ``DOCCHECK_API_KEY`` / ``DOCCHECK_DATABASE_URL`` (ledger: ``sqlite:///doccheck.db``).
      The same ledger across calls is what makes a rerun free.
    - ``wait=False`` returns once everything is submitted (results: pending);
      ``timeout`` bounds the wait.
    - ``use_prefect=True`` runs the ``bulk_check`` flow (visible in the Prefect UI; reports
      also written under ``out_dir``); the key then comes from ``api_key_block`` or the
      environment (``api_key`` is set in this process's environment for the flow only).
    - ``templates``: files every student was given; local cohort matching ignores their text.
      The pairs come back as ``cohort_matches`` (identical, near_duplicate, copied_section).

    Raises ``ValueError`` for a bad call (unknown column...), ``ManifestError`` for a bad
    configuration; bad ROWS never raise: they come back in ``submissions`` as ``rejected``.
    """
    if use_prefect:
        return _check_with_prefect(
            df, text_column=text_column, path_column=path_column, id_column=id_column, products=products,
            products_column=products_column, name_column=name_column, metadata_columns=metadata_columns,
            base_dir=base_dir, base_url=base_url, api_key=api_key, api_key_block=api_key_block, campaign=campaign,
            database_url=database_url, wait=wait, timeout=timeout, grace_seconds=grace_seconds,
            poll_interval=poll_interval, concurrency=concurrency, max_spend_cents=max_spend_cents, out_dir=out_dir,
            templates=templates,
        )  # fmt: skip
    return _run_sync(
        lambda: acheck_dataframe(
            df, text_column=text_column, path_column=path_column, id_column=id_column, products=products,
            products_column=products_column, name_column=name_column, metadata_columns=metadata_columns,
            base_dir=base_dir, base_url=base_url, api_key=api_key, campaign=campaign, database_url=database_url,
            wait=wait, timeout=timeout, grace_seconds=grace_seconds, poll_interval=poll_interval,
            concurrency=concurrency, max_spend_cents=max_spend_cents, templates=templates,
        )  # fmt: skip
    )


def _check_with_prefect(df: pd.DataFrame, *, text_column: str | None, path_column: str | None, id_column: str,
                        products: Sequence[str] | str, products_column: str | None, name_column: str | None,
                        metadata_columns: Sequence[str], base_dir: str | os.PathLike[str] | None,
                        base_url: str | None, api_key: str | SecretStr | None, api_key_block: str | None,
                        campaign: str, database_url: str | None, wait: bool, timeout: float, grace_seconds: float,
                        poll_interval: float, concurrency: int, max_spend_cents: int | None,
                        out_dir: str | os.PathLike[str] | None, templates: Sequence[str] = ()) -> CheckResult:  # fmt: skip
    """Run the ``bulk_check`` flow on a temporary manifest and read its reports back."""
    import pyarrow.parquet as pq

    from doccheck.reports import REPORT_FILES, SCHEMAS

    base = Path(base_dir or os.getcwd()).resolve()
    rows = _manifest_rows(df, text_column=text_column, path_column=path_column, id_column=id_column,
                          products_column=products_column, name_column=name_column,
                          metadata_columns=metadata_columns, base_dir=base)  # fmt: skip
    folder = base if path_column is not None else Path(tempfile.mkdtemp(prefix="doccheck-notebook-"))
    handle, manifest = tempfile.mkstemp(prefix=".doccheck-notebook-", suffix=".jsonl", dir=folder)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    reports = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="doccheck-notebook-reports-"))
    key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
    previous = os.environ.get("DOCCHECK_API_KEY")

    def run() -> Any:
        from flows.bulk_check import bulk_check  # lazy: the library never imports prefect

        return asyncio.run(
            bulk_check(
                manifest=manifest, products=[products] if isinstance(products, str) else list(products),
                out_dir=str(reports), campaign=campaign, concurrency=concurrency, wait=wait,
                wait_timeout=timeout, max_spend_cents=max_spend_cents, metadata_columns=list(metadata_columns),
                base_url=base_url, database_url=database_url, grace_seconds=grace_seconds,
                poll_interval=poll_interval, api_key_block=api_key_block, templates=list(templates),
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
        name: pq.read_table(run_dir / REPORT_FILES[name]).to_pandas(types_mapper=pd.ArrowDtype)
        for name in SCHEMAS
    }
    return CheckResult(**frames, run_id=summary.run_id, campaign=summary.campaign, summary=summary.model_dump(mode="json"))
