"""The cohort-matching task and its artifact: one call from ``bulk_check`` (dry run or real run)."""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import acreate_table_artifact
from prefect.cache_policies import NONE

from doccheck.matching import match_plan, summary_of
from doccheck.matching.store import existing_ledger
from doccheck.planning import Plan
from prefect_doccheck.tasks.artifacts import artifact_key


@task(name="match cohort", task_run_name="match cohort", cache_policy=NONE)
def match_cohort_task(plan: Plan, run_id: str | None, database_url: str | None, templates: list[str]) -> dict[str, Any]:
    """Local near-duplicate pairs of the run (free, before anything is sent).

    ``run_id`` None is a dry run: an existing ledger at ``database_url`` is only read."""
    from prefect_doccheck.tasks.pipeline import ledger_for

    if run_id is not None:
        ledger = ledger_for(database_url) if database_url else None
        return summary_of(match_plan(plan, run_id=run_id, ledger=ledger, templates=templates))
    # Dry run: read an existing ledger (earlier runs of the campaign), never create or write one.
    existing = existing_ledger(database_url)
    try:
        return summary_of(match_plan(plan, ledger=existing, templates=templates))
    finally:
        if existing is not None:
            existing.close()


async def match_and_report(
    plan: Plan, *, run_id: str | None = None, database_url: str | None = None, templates: list[str] | None = None
) -> dict[str, Any]:
    """Run the task, then log and publish its pairs (:func:`publish_cohort`)."""
    summary = match_cohort_task(plan, run_id, database_url, list(templates or []))
    await publish_cohort(summary, plan.campaign)
    return summary


async def publish_cohort(summary: dict[str, Any], campaign: str) -> None:
    """Log every shown pair and publish the top pairs as a table artifact."""
    logger = get_run_logger()
    logger.info(
        "cohort matching: %d pairs (%d identical, %d near-duplicate, %d copied section) among %d documents "
        "(+%d from earlier runs)",
        summary["pairs"], summary["identical"], summary["near_duplicate"], summary["copied_section"],
        summary["documents"], summary["earlier_documents"],
    )  # fmt: skip
    for p in summary["top"]:
        logger.info(
            "pair: %s ~ %s (%s, %.1f%% / %.1f%%, %d words)",
            p["document_id"], p["matched_document_id"], p["kind"], p["percent"], p["matched_percent"], p["matched_words"],
        )  # fmt: skip
    for skipped in summary["skipped_documents"]:
        logger.warning("cohort matching skipped %s", skipped["reason"])
    if summary["top"]:
        await acreate_table_artifact(
            table=summary["top"],
            key=artifact_key(campaign, "cohort"),
            description=f"{campaign}: top {len(summary['top'])} of {summary['pairs']} near-duplicate pairs (local)",
        )
