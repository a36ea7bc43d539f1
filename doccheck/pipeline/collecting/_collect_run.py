"""Collect a run (or every run of a campaign with pending products): poll, rewrite the reports.

Why here and not only in the ``collect_results`` flow: ``doccheck collect`` without a Prefect
server runs these same steps in its own process, and the flow builds its summary with
:func:`collected_summary`, so the two can never report a collect differently.
"""

from __future__ import annotations

import time
from typing import Any

from doccheck.client import ConfigurationError
from doccheck.ledger import Ledger
from doccheck.outputs import ReportPaths, rules_from_params, run_label, write_reports
from doccheck.pipeline._summary import (
    RunSummary,
    money_fields,
    notice_fields,
    products_from_summary,
    with_export_rejections,
)
from doccheck.pipeline.collecting._campaign_runs import runs_with_pending
from doccheck.pipeline.collecting._results import apply_events, describe_poll_errors, poll_pending, report_tables
from doccheck.storage import display

__all__ = ["collect_runs", "collected_summary", "runs_to_collect"]


def runs_to_collect(ledger: Ledger, *, campaign: str | None, run_id: str | None) -> tuple[Any, list[str]]:
    """The run to collect (the given one, or the campaign's latest) and the campaign's other runs
    with pending products, whose reports are rewritten first (so ``latest/`` stays the latest's)."""
    if not campaign and not run_id:
        raise ConfigurationError("give a campaign or a run id")
    if run_id:
        run = ledger.get_run(run_id)
        if run is None:
            raise ConfigurationError(f"no run {run_id!r} in the ledger")
        return run, []
    run = ledger.latest_run(str(campaign))
    if run is None:
        raise ConfigurationError(f"no run of campaign {campaign!r} in the ledger")
    return run, [r for r in runs_with_pending(ledger, run.campaign) if r != run.id]


def collected_summary(
    ledger: Ledger, run: Any, paths: ReportPaths, *, by_campaign: bool, runs_collected: int, started: float
) -> RunSummary:
    """The summary of a collect from the ledger's counts (by campaign, ``pending`` is the campaign's)."""
    counts = ledger.run_summary(run.id)
    products = products_from_summary(counts.get("products", {}))
    pending = sum(c.get("pending", 0) for c in products.values())
    if by_campaign:
        pending = ledger.outcome_counts(campaign=run.campaign)["pending"]
    submissions = counts.get("submissions", {})
    summary = RunSummary(
        status="finished" if pending == 0 else "pending",
        campaign=run.campaign,
        manifest=run.manifest,
        run_id=run.id,
        documents=counts.get("documents", 0),
        rejected=counts.get("rejected", 0),
        reused=submissions.get("submitted", 0),
        submit_failed=submissions.get("failed", 0),
        unsent_budget=submissions.get("skipped_budget", 0),
        products=products,
        pending=pending,
        spent_cents=0,  # collecting creates no check
        total_words=counts.get("words", 0),
        estimated_cost_cents=counts.get("estimated_cost_cents", 0),
        counts_by_mode=counts.get("modes", {}),
        as_text=int(counts.get("as_text", 0)),
        misnamed=int(counts.get("misnamed", 0)),
        **money_fields(counts),
        **notice_fields(counts),
        report_dir=display(paths.run_dir),
        latest_dir=display(paths.latest_dir),
        elapsed_seconds=round(time.monotonic() - started, 3),
        runs_collected=runs_collected,
    )
    return with_export_rejections(summary)  # an LMS export's refused entries count, as in its reports


def _write(ledger: Ledger, run_id: str, out_dir: str, campaign: str, *, staged: bool = False) -> ReportPaths:
    """``staged``: the folder and latest/ are published by ``write_run_outputs``, once complete;
    else (an earlier run's reports) the folder is published and latest/ left alone."""
    metadata = ledger.document_metadata(run_id) or None
    tables = report_tables(ledger, run_id)
    label = run_label(campaign, run_id)
    return write_reports(out_dir, label, tables, metadata=metadata, staged=staged, latest=staged)


async def collect_runs(
    ledger: Ledger,
    client: Any,
    *,
    campaign: str | None = None,
    run_id: str | None = None,
    out_dir: str = "reports",
    download: tuple[str, ...] = (),
) -> RunSummary:
    """``collect_results`` as library calls in this process: apply stored events, poll what is not
    final, rewrite the reports of the runs concerned and the instructor's files."""
    from doccheck.outputs.instructor import write_run_outputs

    started = time.monotonic()
    run, earlier = runs_to_collect(ledger, campaign=campaign, run_id=run_id)
    apply_events(ledger)
    polled = await poll_pending(client, ledger, run_id=run.id if run_id else None,
                       campaign=None if run_id else run.campaign, older_than_seconds=0)  # fmt: skip
    for other in earlier:
        _write(ledger, other, out_dir, run.campaign)
    paths = _write(ledger, run.id, out_dir, run.campaign, staged=True)
    summary = collected_summary(ledger, run, paths, by_campaign=not run_id, runs_collected=1 + len(earlier),
                                started=started)  # fmt: skip
    summary.poll_errors = describe_poll_errors(polled.errors)
    outputs = await write_run_outputs(
        paths.run_dir, paths.latest_dir, campaign=run.campaign, run_id=run.id, ledger=ledger,
        client=client if download else None, download=download, status=summary.status, spent_cents=None,
        rules=rules_from_params(run.params),  # the rules the run was judged with, not the defaults
    )  # fmt: skip
    summary.report_html = display(outputs.paths.report_html)
    summary.downloads = outputs.downloads.as_dict() if outputs.downloads is not None else None
    return summary
