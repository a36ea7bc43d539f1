"""One call per place a user looks: match a planned run, keep what matching needs, show the pairs.

The flow (through ``prefect_doccheck.tasks._matching``), the notebook API and the CLI call these, so each of
them needs one line and the rules (what is stored, what a dry run touches) live here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from doccheck.matching._cohort import CohortResult, MatchOptions, match_cohort
from doccheck.matching._signature_store import LedgerStore, MemoryStore, OverlayStore, SignatureStore

if TYPE_CHECKING:
    from rich.table import Table

    from doccheck.ledger import Ledger

__all__ = ["TOP_PAIRS", "match_documents", "match_plan", "match_stream", "pairs_table", "summary_of"]

#: Pairs shown in summaries, artifacts and the dry run (all of them are in the report).
TOP_PAIRS = 20


class PlanLike(Protocol):
    """What matching reads of planning's ``Plan``: the pipeline is above matching, so matching
    names the fields it reads, not the class."""

    @property
    def campaign(self) -> str: ...

    @property
    def documents(self) -> Iterable[Any]: ...


def match_plan(
    plan: PlanLike,
    *,
    run_id: str | None = None,
    ledger: Ledger | None = None,
    templates: Sequence[str] = (),
    options: MatchOptions | None = None,
) -> CohortResult:
    """Match a plan's documents with each other and, given a ledger, with the campaign's earlier runs.

    With ``ledger`` and ``run_id`` (a real run) the new signatures and the pairs are stored.
    With a ledger but no ``run_id`` (a dry run) earlier runs are compared and nothing is written;
    with neither, the plan's documents are compared with each other only. ``templates`` are files whose text every
    student was given (removed before matching).
    """
    return match_documents(plan.documents, plan.campaign, run_id=run_id, ledger=ledger, templates=templates,
                           options=options)  # fmt: skip


def match_documents(
    documents: Iterable[Any],
    campaign: str,
    *,
    run_id: str | None = None,
    ledger: Ledger | None = None,
    templates: Sequence[str] = (),
    options: MatchOptions | None = None,
) -> CohortResult:
    """:func:`match_plan` over any iterable of planned documents (a stream: each is used and dropped)."""
    options = options or MatchOptions()
    if templates:
        options = replace(options, template_files=tuple(options.template_files) + tuple(str(t) for t in templates))
    if ledger is None:
        store: SignatureStore = MemoryStore()
    elif run_id is None:  # a dry run with a ledger: compare with earlier runs, write nothing
        store = OverlayStore(ledger)
    else:
        store = LedgerStore(ledger)
    result = match_cohort(documents, campaign=campaign, run_id=run_id or "dry-run", store=store, options=options)
    if ledger is not None and run_id is not None:
        from doccheck.ledger import replace_cohort_matches

        replace_cohort_matches(ledger, run_id, campaign, result.pairs)
    return result


def summary_of(result: CohortResult, top: int = TOP_PAIRS) -> dict[str, Any]:
    """Counts plus the strongest pairs, JSON-able (for RunSummary and artifacts)."""
    return {**result.summary(), "top": result.top(top), "skipped_documents": result.skipped[:top]}


def pairs_table(summary: dict[str, Any] | None, title: str | None = None) -> Table | None:
    """A rich table of the top pairs (None when there are none)."""
    from rich.table import Table

    pairs = (summary or {}).get("top") or []
    if not pairs:
        return None
    total = summary.get("pairs", len(pairs)) if summary else len(pairs)
    shown = f" (top {len(pairs)} of {total})" if total > len(pairs) else ""
    table = Table(title=title or f"cohort pairs found locally{shown}", title_justify="left")
    for column in ("document", "matched document", "kind", "% of doc", "% of matched", "words", "jaccard"):
        table.add_column(column, overflow="fold")
    for p in pairs:
        table.add_row(
            str(p["document_id"]),
            str(p["matched_document_id"]) + (" (earlier run)" if p.get("matched_run_id") else ""),
            str(p["kind"]),
            f"{p['percent']:.1f}",
            f"{p['matched_percent']:.1f}",
            str(p["matched_words"]),
            f"{p['jaccard']:.2f}",
        )
    return table


def match_stream(
    documents: Iterable[Any], *, campaign: str, database_url: str | None = None, templates: Sequence[str] = ()
) -> dict[str, Any]:
    """A dry run's cohort matching of streamed documents: :func:`summary_of` the result.

    Compared with the campaign's earlier runs when ``database_url`` names an existing ledger
    (read only); this run's rows wait in a :class:`~doccheck.matching._spill.SpillStore`.
    Module level and light to import (no planning, no pyarrow), so that
    :mod:`doccheck.matching._background` can run it in its child process.
    """
    from doccheck.matching._signature_store import existing_ledger
    from doccheck.matching._spill import SpillStore

    options = MatchOptions()
    if templates:
        options = replace(options, template_files=tuple(options.template_files) + tuple(str(t) for t in templates))
    ledger = existing_ledger(database_url)
    spill = SpillStore()  # this run's shingle sets wait on disk, not in memory
    try:
        store: SignatureStore = spill
        if ledger is not None:
            overlay = OverlayStore(ledger)
            overlay.memory = spill  # type: ignore[assignment]  # same interface as MemoryStore
            store = overlay
        return summary_of(match_cohort(documents, campaign=campaign, run_id="dry-run", store=store, options=options))
    finally:
        spill.close()
        if ledger is not None:
            ledger.close()
