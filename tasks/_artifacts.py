"""What a run shows in the Prefect UI: progress while it runs, then a table, a summary and a picture.

Why a module of its own: the flows only say *when* (``RunProgress`` around the work,
``publish_run_artifacts`` at the end); *what* is built here by plain functions
(``outcome_rows``, ``summary_markdown``, ``score_histogram_png``) that take report tables
and return data, so they are unit-tested without a server. The content comes from the
Parquet reports the run just wrote, so the UI shows exactly what the files hold.

Keys are stable per campaign (``bulk-check-<campaign>``, ``...-progress``, ``...-outcomes``,
``...-scores``): the Artifacts page then shows one history per campaign, week after week.
Nothing here ever sees the API key or the webhook secret.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pyarrow.parquet as pq

from doccheck import domain
from doccheck.config import load_settings
from doccheck.domain import estimate_cost_cents
from doccheck.outputs import REPORT_FILES, escape_markdown
from doccheck.pipeline import Progress
from doccheck.storage import ShareLink, UserPath, arrow_filesystem, display, resolve, share_link, write_bytes

log = logging.getLogger(__name__)

#: Name of the histogram written beside the Parquet files of a run.
SCORES_PNG = "scores.png"
#: How many of the highest scores the summary lists per product.
TOP_N = 5
PRODUCTS = domain.PRODUCTS


# --------------------------------------------------------------------------- keys


def artifact_key(campaign: str, kind: str | None = None, prefix: str = "bulk-check") -> str:
    """A Prefect artifact key for ``campaign``: lowercase letters, digits and dashes only.

    >>> artifact_key("History 101 / A3", "scores")
    'bulk-check-history-101-a3-scores'
    """
    slug = re.sub(r"[^a-z0-9]+", "-", campaign.lower()).strip("-") or "run"
    suffix = f"-{kind}" if kind else ""
    head = f"{prefix}-{slug}"[: 100 - len(suffix)].rstrip("-")
    return head + suffix


# --------------------------------------------------------------------------- links


def artifact_link(location: str | UserPath) -> ShareLink:
    """How an artifact links an output (``DOCCHECK_ARTIFACT_LINKS``): the object's URL on a store
    (a local file's ``file://`` URI), or a link presigned for ``DOCCHECK_ARTIFACT_LINK_EXPIRY_S``."""
    outputs = load_settings().outputs
    seconds = outputs.artifact_link_expiry_seconds if outputs.artifact_links == "presigned" else None
    return share_link(location, presign_seconds=seconds)


def _located(location: UserPath) -> str | ShareLink:
    """What the summary lists for an output: a presigned link, or its location as text (the
    object's URL on a store, the path on a local disk)."""
    link = artifact_link(location)
    return link if link.presigned else display(location)


def _md_link(name: str, link: ShareLink) -> str:
    """A presigned link as a markdown link with its expiry next to it; any other link as its text."""
    if not link.presigned:
        return _md(link.url)
    return f"[{escape_markdown(name)}](<{link.url}>) (presigned link, {link.expiry_text()})"


# --------------------------------------------------------------------------- reading reports


def read_report_rows(report_dir: str | UserPath) -> dict[str, list[dict[str, Any]]]:
    """The rows of each Parquet report in ``report_dir`` (a folder or a store's URL; a missing
    file gives no rows)."""
    folder = resolve(report_dir)
    rows: dict[str, list[dict[str, Any]]] = {}
    for name, filename in REPORT_FILES.items():
        path = folder / filename
        if path.is_file():
            filesystem, where = arrow_filesystem(path)
            rows[name] = pq.read_table(where, filesystem=filesystem).to_pylist()
        else:
            rows[name] = []
    return rows


# --------------------------------------------------------------------------- builders


def outcome_rows(tables: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Per-product outcome counts and cost, plus a ``total`` row, for the table artifact.

    ``cost_cents`` per product follows the service's price rule on the check's words for
    every product that did not fail (failed products are refunded); the ``total`` row's
    cost is what the submissions report says was charged, which is authoritative.
    """
    words_by_check = {
        r.get("check_id"): int(r.get("words") or 0) for r in tables.get("submissions", []) if r.get("check_id")
    }
    out: list[dict[str, Any]] = []
    totals = {"requested": 0, "completed": 0, "failed": 0, "pending": 0}
    for product in PRODUCTS:
        rows = tables.get(f"{product}_results", [])
        counts = {"requested": len(rows), "completed": 0, "failed": 0, "pending": 0}
        cost = 0
        for row in rows:
            status = str(row.get("status") or "pending")
            counts[status if status in ("completed", "failed") else "pending"] += 1
            if status != "failed" and row.get("check_id") in words_by_check:
                cost += estimate_cost_cents(words_by_check[row.get("check_id")], [product])
        for k in totals:
            totals[k] += counts[k]
        out.append({"product": product, **counts, "cost_cents": cost})
    charged = sum(int(r.get("cost_cents") or 0) for r in tables.get("submissions", []))
    out.append({"product": "total", **totals, "cost_cents": charged})
    return out


def top_scores(tables: Mapping[str, Sequence[Mapping[str, Any]]], product: str, n: int = TOP_N) -> list[dict[str, Any]]:
    """The ``n`` completed results of ``product`` with the highest score, highest first."""
    rows = [r for r in tables.get(f"{product}_results", []) if r.get("score") is not None]
    rows.sort(key=lambda r: float(r["score"]), reverse=True)
    keep = ("document_id", "check_id", "score", "label") if product == "ai" else (
        "document_id", "check_id", "score", "matched_words", "source_count")  # fmt: skip
    return [{k: r.get(k) for k in keep} for r in rows[:n]]


def _md(value: Any) -> str:
    """An untrusted value as literal markdown text (doccheck.outputs.escape_markdown); numbers as written."""
    if value is None:
        return "-"
    return str(value) if isinstance(value, (int, float)) else escape_markdown(value)


def _md_table(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return "_none_"
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_md(r.get(h)) for h in head) + " |" for r in rows]
    return "\n".join(lines)


def summary_markdown(
    summary: Mapping[str, Any],
    tables: Mapping[str, Sequence[Mapping[str, Any]]],
    report_files: Mapping[str, str | Path | ShareLink] | None = None,
    image_path: str | Path | ShareLink | None = None,
) -> str:
    """The run's summary for a person: documents, rejects with reasons, spend, highest
    scores, and where the Parquet reports are (a :class:`ShareLink` of a file: a presigned one
    is a link, its expiry beside it). ``summary`` is a ``RunSummary`` dump."""
    campaign = summary.get("campaign") or "?"
    lines = [f"# doccheck run: {_md(campaign)}", ""]
    facts = [
        ("status", summary.get("status")),
        ("run id", summary.get("run_id")),
        ("manifest", summary.get("manifest")),
        ("documents accepted", summary.get("documents")),
        ("rows rejected", summary.get("rejected")),
        ("new checks", summary.get("submitted")),
        ("documents already submitted (no charge)", summary.get("reused")),
        ("documents not submitted (errors)", summary.get("submit_failed")),
        ("documents left unsent (budget)", summary.get("unsent_budget")),
        ("products pending", summary.get("pending")),
        ("estimated cost (cents)", summary.get("estimated_cost_cents")),
        ("checks", summary.get("checks")),
        ("charged (cents)", summary.get("charged_cents")),
        ("refunded (cents)", summary.get("refunded_cents")),
        ("net cost (cents)", summary.get("net_cents")),
        ("charged this run (cents)", summary.get("spent_cents")),
        ("elapsed (s)", summary.get("elapsed_seconds")),
    ]
    lines += ["| | |", "|---|---|", *(f"| {k} | {_md(v)} |" for k, v in facts if v is not None), ""]
    lines += ["## Outcomes per product", "", _md_table(outcome_rows(tables)), ""]
    rejects = [
        {"row": r.get("row_number"), "document_id": r.get("document_id"), "code": r.get("error_code"),
         "reason": r.get("error_message")}
        for r in tables.get("submissions", []) if r.get("status") == "rejected"
    ]  # fmt: skip
    if not rejects and summary.get("rejections"):
        rejects = [{"row": r.get("row"), "document_id": r.get("document_id"), "code": r.get("code"),
                    "reason": r.get("reason")} for r in summary["rejections"]]  # fmt: skip
    lines += [f"## Rejected rows ({len(rejects)})", "", _md_table(rejects), ""]
    failures = [
        {"document_id": r.get("document_id"), "status": r.get("status"), "code": r.get("error_code"),
         "message": r.get("error_message")}
        for r in tables.get("submissions", []) if r.get("status") not in ("rejected", "submitted", None)
    ]  # fmt: skip
    if failures:
        lines += [f"## Not submitted ({len(failures)})", "", _md_table(failures), ""]
    lines += [f"## Highest AI scores (top {TOP_N})", "", _md_table(top_scores(tables, "ai")), ""]
    lines += [f"## Highest similarity scores (top {TOP_N})", "", _md_table(top_scores(tables, "similarity")), ""]
    if report_files or summary.get("report_dir"):
        lines += ["## Reports", ""]
        if summary.get("report_dir"):
            lines.append(f"- run folder: {_md(summary['report_dir'])}")
        if summary.get("latest_dir"):
            lines.append(f"- latest: {_md(summary['latest_dir'])}")
        for name, path in (report_files or {}).items():
            shown = _md_link(f"{name}", path) if isinstance(path, ShareLink) else _md(path)
            lines.append(f"- {_md(name)}: {shown}")
        if image_path:
            shown = _md_link(SCORES_PNG, image_path) if isinstance(image_path, ShareLink) else _md(image_path)
            lines.append(f"- score histogram: {shown}")
        lines.append("")
    return "\n".join(lines)


def score_histogram_png(ai_scores: Iterable[float | None], similarity_scores: Iterable[float | None]) -> bytes:
    """PNG bytes of two histograms side by side: AI scores (0-1) and similarity scores (0-100).

    matplotlib with the Agg backend (no display, thread-safe enough when each call builds
    its own Figure rather than using pyplot's global state).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ai = [float(s) for s in ai_scores if s is not None]
    sim = [float(s) for s in similarity_scores if s is not None]
    fig = Figure(figsize=(9, 3.4), dpi=100)
    FigureCanvasAgg(fig)
    for i, (values, title, upper, colour) in enumerate(
        ((ai, "AI score", 1.0, "#4f6bed"), (sim, "Similarity score (%)", 100.0, "#e0803a"))
    ):
        ax = fig.add_subplot(1, 2, i + 1)
        ax.hist(values, bins=10, range=(0.0, upper), color=colour, edgecolor="white")
        ax.set_title(f"{title}  (n={len(values)})")
        ax.set_xlim(0.0, upper)
        ax.set_ylabel("documents")
        if not values:
            ax.text(0.5, 0.5, "no results", ha="center", va="center", transform=ax.transAxes, color="grey")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def png_data_url(png: bytes) -> str:
    """A ``data:`` URL the Prefect UI's image artifact can show without any file server
    (a ``file://`` URL would not load in a browser page served over http)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# --------------------------------------------------------------------------- progress


class RunProgress:
    """A progress artifact that follows a run: submission, then (when waiting) results.

    The library reports progress through ``prefect_doccheck.tasks._progress_hub`` listeners, synchronously and
    possibly from worker threads; :meth:`listener` only records numbers under a lock. A
    small coroutine (:meth:`run`) pushes the latest figure to the Prefect API at most
    once per ``interval`` seconds, so 10,000 documents do not mean 10,000 API calls.
    """

    def __init__(self, key: str, documents: int, products: int, *, wait: bool, interval: float = 1.0) -> None:
        self.key = key
        self.documents = max(0, documents)
        self.products = max(0, products)
        self.wait = wait
        self.interval = interval
        self.submitted = 0
        self.results = 0
        self.artifact_id: UUID | None = None
        self._lock = threading.Lock()
        self._sent: tuple[float, str] | None = None

    def listener(self, event: Progress) -> None:
        """``prefect_doccheck.tasks._progress_hub`` listener: remember the run-wide counts of each phase."""
        with self._lock:
            if event.phase == "submit":
                self.submitted = min(event.done, self.documents) if self.documents else event.done
            elif event.phase == "wait":
                self.results = min(event.done, self.products) if self.products else event.done

    def percent(self) -> float:
        """Submission is the first half when the run waits for results, the whole otherwise."""
        with self._lock:
            sub = self.submitted / self.documents if self.documents else 1.0
            res = self.results / self.products if self.products else 1.0
        value = (sub * 50.0 + res * 50.0) if self.wait else sub * 100.0
        return round(max(0.0, min(100.0, value)), 1)

    def description(self) -> str:
        """What the UI shows under the bar, e.g. ``submitted 8/13 documents; results 5/20 products``."""
        with self._lock:
            text = f"submitted {self.submitted}/{self.documents} documents"
            if self.wait:
                text += f"; results {self.results}/{self.products} products"
        return text

    def mark_submitted(self) -> None:
        """Everything was handed to the service (including rows the ledger already had)."""
        with self._lock:
            self.submitted = self.documents

    def mark_results(self, done: int) -> None:
        with self._lock:
            self.results = min(done, self.products) if self.products else done

    async def start(self) -> None:
        from prefect.artifacts import acreate_progress_artifact

        self.artifact_id = await acreate_progress_artifact(
            progress=self.percent(), key=self.key, description=self.description()
        )
        self._sent = (self.percent(), self.description())

    async def push(self) -> None:
        """Send the current figure if it changed (errors are logged, never raised)."""
        from prefect.artifacts import aupdate_progress_artifact

        if self.artifact_id is None:
            return
        current = (self.percent(), self.description())
        if current == self._sent:
            return
        try:
            await aupdate_progress_artifact(self.artifact_id, progress=current[0], description=current[1])
            self._sent = current
        except Exception as exc:  # noqa: BLE001 - the UI is a view; the run goes on
            log.debug("progress artifact update failed: %s", type(exc).__name__)

    async def run(self) -> None:
        """Push every ``interval`` seconds until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            await self.push()


class track_progress:  # noqa: N801 - used as ``async with track_progress(...)``
    """``async with track_progress(key, documents, products, wait=...) as p:`` creates the
    progress artifact, listens to ``prefect_doccheck.tasks._progress_hub`` and keeps the artifact current; on
    exit it sends the final figure."""

    def __init__(self, key: str, documents: int, products: int, *, wait: bool, interval: float = 1.0) -> None:
        self.progress = RunProgress(key, documents, products, wait=wait, interval=interval)
        self._task: asyncio.Task[None] | None = None
        self._listening: Any = None

    async def __aenter__(self) -> RunProgress:
        from prefect_doccheck.tasks import _progress_hub as run_progress

        await self.progress.start()
        self._listening = run_progress.listening(self.progress.listener)
        self._listening.__enter__()
        self._task = asyncio.create_task(self.progress.run())
        return self.progress

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
        if self._listening is not None:
            self._listening.__exit__(None, None, None)
        await self.progress.push()


# --------------------------------------------------------------------------- publishing


async def publish_run_artifacts(
    summary: Mapping[str, Any],
    *,
    prefix: str = "bulk-check",
) -> dict[str, UUID]:
    """Create the end-of-run artifacts from the run's Parquet reports: the outcome table,
    the summary markdown and the score histogram (also saved as ``scores.png`` in the
    run folder; none while the run has no score yet). Returns kind → artifact id. Only the
    PNG file is best effort (a write error is logged); an artifact the Prefect API refuses
    raises and so fails the flow run, after the Parquet reports are already written
    (``collect_results`` rebuilds the artifacts from them)."""
    from prefect.artifacts import acreate_image_artifact, acreate_markdown_artifact, acreate_table_artifact

    campaign = str(summary.get("campaign") or "run")
    report_dir = summary.get("report_dir")
    tables = read_report_rows(report_dir) if report_dir else {name: [] for name in REPORT_FILES}
    report_files = {name: _located(resolve(report_dir) / f) for name, f in REPORT_FILES.items()} if report_dir else {}
    created: dict[str, UUID] = {}

    image_path: UserPath | None = None
    ai_scores = [r.get("score") for r in tables.get("ai_results", []) if r.get("score") is not None]
    similarity_scores = [r.get("score") for r in tables.get("similarity_results", []) if r.get("score") is not None]
    # No score yet (a ``--no-wait`` run): no histogram of nothing, and no matplotlib (~0.5 s of
    # the run's fixed cost); ``collect-results`` draws it when the results are in.
    png = score_histogram_png(ai_scores, similarity_scores) if ai_scores or similarity_scores else None
    if report_dir and png is not None:
        image_path = resolve(report_dir) / SCORES_PNG
        try:
            write_bytes(image_path, png)  # one whole file (on a store: one object, beside run.json)
        except OSError as exc:
            log.warning("could not write %s: %s", display(image_path), type(exc).__name__)
            image_path = None

    created["outcomes"] = await acreate_table_artifact(
        table=outcome_rows(tables),
        key=artifact_key(campaign, "outcomes", prefix),
        description=f"{prefix} {campaign}: outcomes and cost per product",
    )
    created["summary"] = await acreate_markdown_artifact(
        markdown=summary_markdown(summary, tables, report_files, _located(image_path) if image_path else None),
        key=artifact_key(campaign, None, prefix),
        description=f"{prefix} {campaign}: run summary",
    )
    if png is not None:
        created["scores"] = await acreate_image_artifact(
            image_url=png_data_url(png),
            key=artifact_key(campaign, "scores", prefix),
            description=f"{prefix} {campaign}: histogram of AI and similarity scores",
        )
    log.info("artifacts for %s: %s", campaign, ", ".join(created))
    return created
