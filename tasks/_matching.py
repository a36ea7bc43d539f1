"""The cohort-matching task and its artifact: one call from ``bulk_check`` (dry run or real run)."""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger
from prefect.artifacts import acreate_table_artifact

from prefect_doccheck.tasks._artifacts import artifact_key


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
