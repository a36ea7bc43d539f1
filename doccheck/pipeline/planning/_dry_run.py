"""``doccheck run --dry-run`` in the library: plan and cohort-match a manifest, no Prefect at all.

Why not the flow: a dry run only reads a file, yet running it as a flow started a temporary
Prefect server when none was running (tens of seconds, issue 10). This module does what the
flow's dry run does — validate, plan, match the cohort locally (reading an existing ledger,
never creating or writing one) — and returns the same summary fields, so the CLI prints the
same tables. The manifest streams through (:mod:`doccheck.pipeline.planning._plan_stream`): documents go
straight to cohort matching and are dropped; only counts, rejections and the matcher's
compact signatures stay in memory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from pydantic import BaseModel, Field, computed_field

from doccheck.config import load_settings
from doccheck.outputs import count_by_reason
from doccheck.pipeline._summary import with_export_rejections
from doccheck.pipeline.planning._plan_stream import PlanTally, iter_planned, resolve_campaign
from doccheck.storage import UserPath, describe, display, resolve

__all__ = ["BACKGROUND_BYTES", "DryRunSummary", "dry_run"]

#: A manifest from this size on (~1,600 rows of 400 words) is matched in a second process:
#: below it the process's start (~0.5 s) is not won back.
BACKGROUND_BYTES = 4 * 1024 * 1024


class DryRunSummary(BaseModel):
    """The dry-run fields of the flow's ``RunSummary`` (same names, so the CLI renders both alike)."""

    status: str = "planned"
    campaign: str
    manifest: str
    dry_run: bool = True
    documents: int = 0
    rejected: int = 0
    counts_by_mode: dict[str, int] = Field(default_factory=dict)
    #: Files to be sent as the text doccheck read (the service profile does not take their type).
    as_text: int = 0
    #: Files whose name says another type than their bytes (read as what they are).
    misnamed: int = 0
    total_words: int = 0
    estimated_cost_cents: int = 0
    elapsed_seconds: float = 0.0
    rejections: list[dict[str, str | int | None]] = Field(default_factory=list)
    cohort_matches: dict[str, Any] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def not_checked(self) -> dict[str, int]:
        """The rows that will not be checked, by reason in words, before anything is paid."""
        return count_by_reason(self.rejections)


def dry_run(
    manifest: str | os.PathLike[str],
    *,
    campaign: str | None = None,
    products: str | Sequence[str] | None = None,
    metadata_columns: str | Sequence[str] = (),
    database_url: str | None = None,
    templates: Sequence[str] = (),
    match: bool = True,
    background: bool | None = None,
    base_url: str | None = None,
) -> DryRunSummary:
    """Validate, plan and (``match``) cohort-match ``manifest``; nothing is sent or written.

    ``database_url``: a ledger to compare with the campaign's earlier runs, read only (a
    SQLite file that does not exist is not created); the file types it learnt the service at
    ``base_url`` (default: the settings') refuses are planned as text, as the run will send them.
    Raises ``ManifestError`` for
    configuration errors, as ``load_plan`` does. ``background``: match in a second process
    fed while the manifest is planned (:func:`doccheck.matching.match_in_background`); None = when the
    manifest is at least :data:`BACKGROUND_BYTES`, the machine has two cores or more and
    ``DOCCHECK_MATCH_BACKGROUND`` is on (``submission.match_background``). Off by default: on the shared 2-core machine it
    did not lower the wall time of a 100,000-row dry run and adds the child's ~40 MB
    (docs/benchmarks.md, "term_scale.py").
    """
    started = time.monotonic()
    _adopt_learnt(database_url, base_url)
    source = resolve(manifest)
    tally = PlanTally(campaign=resolve_campaign(source, campaign), manifest=source)
    documents = iter_planned(manifest, tally, products=products, metadata_columns=metadata_columns)
    cohort: dict[str, Any] = {}
    if match:
        from doccheck.matching import match_stream

        run = partial(match_stream, campaign=tally.campaign, database_url=database_url, templates=tuple(templates))
        if background is None:
            background = (
                load_settings().submission.match_background
                and (os.cpu_count() or 1) >= 2
                and _size(source) >= BACKGROUND_BYTES
            )
        if background:
            from doccheck.matching import match_in_background

            cohort = match_in_background(documents, run)
        else:
            cohort = run(documents)
    else:
        for _ in documents:
            pass
    summary = DryRunSummary(
        campaign=tally.campaign,
        manifest=manifest if isinstance(manifest, str) else display(source),
        documents=tally.documents,
        rejected=len(tally.rejections),
        counts_by_mode=tally.counts_by_mode(),
        as_text=tally.as_text,
        misnamed=tally.misnamed,
        total_words=tally.total_words(),
        estimated_cost_cents=tally.estimated_cost_cents(),
        elapsed_seconds=round(time.monotonic() - started, 3),
        rejections=[
            {"row": r.row_number, "document_id": r.document_id, "field": r.field, "code": r.code, "reason": r.reason}
            for r in tally.rejections
        ],
        cohort_matches=cohort,
    )
    # an LMS export's refused entries are rejected too (and rows of the reports), though no manifest row
    return with_export_rejections(summary)


def _size(source: UserPath) -> int:
    """The manifest's size in bytes (0 when it cannot be asked: the reader says why)."""
    try:
        entry = describe(source)
    except OSError:
        return 0
    return entry.size if entry is not None else 0


def _adopt_learnt(database_url: str | None, base_url: str | None) -> None:
    """The types the ledger learnt the service refuses, so the dry run plans their files as text
    (read only: a SQLite file that does not exist is not created)."""
    from doccheck.matching import existing_ledger
    from doccheck.pipeline._learnt_types import adopt_for_planning

    ledger = existing_ledger(database_url)
    if ledger is None:
        return
    try:
        adopt_for_planning(ledger, base_url)
    finally:
        ledger.close()
