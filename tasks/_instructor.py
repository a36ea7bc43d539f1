"""Prefect side of the instructor's files: one task after ``write reports`` that downloads
the requested service files and writes ``report.html`` + ``documents.*``, and a link
artifact to the page (a ``file://`` URL for a local file, opened from the UI's machine or
copied from the run folder; the object's URL, ``s3://…/report.html``, when ``out_dir`` is a
bucket: never a path of the worker's disk, which a container's flow run does not keep).

Why one task: the page links the downloaded files, so it must be written after them;
retried on transient errors only (a rerun downloads only what is missing).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from prefect import task

from doccheck.outputs import escape_markdown, parse_kinds
from doccheck.outputs.instructor import write_run_outputs
from doccheck.pipeline import ledger_for
from doccheck.storage import display, is_url
from prefect_doccheck.tasks._artifacts import artifact_key, artifact_link
from prefect_doccheck.tasks._pipeline import TRANSIENT_RETRIES, open_client
from prefect_doccheck.tasks._service_access import KeySource

log = logging.getLogger("doccheck.tasks")

__all__ = ["instructor_report", "publish_report_link"]


@task(name="instructor report", task_run_name="instructor report", **TRANSIENT_RETRIES)
async def instructor_report(
    run_dir: str,
    latest_dir: str | None,
    *,
    campaign: str,
    run_id: str,
    database_url: str,
    base_url: str | None = None,
    api_key_block: KeySource = None,
    download: Sequence[str] = (),
    status: str | None = None,
    spent_cents: int | None = None,
    rules: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Download ``download`` kinds and write the instructor's files; returns paths and counts.

    ``rules``: the ``OutputOptions`` AI fields (length gate, bands, reference campaign)."""
    kinds = parse_kinds(list(download))
    ledger = ledger_for(database_url)
    common: dict[str, Any] = dict(campaign=campaign, run_id=run_id, ledger=ledger, download=kinds,
                                  status=status, spent_cents=spent_cents, rules=rules)  # fmt: skip
    if kinds:
        if base_url is None:
            raise ValueError("downloading files needs the service's base URL")
        async with open_client(base_url, api_key_block) as client:
            outputs = await write_run_outputs(run_dir, latest_dir, client=client, **common)
    else:
        outputs = await write_run_outputs(run_dir, latest_dir, **common)
    downloads = outputs.downloads.as_dict() if outputs.downloads else None
    if downloads:
        log.info("files: %d downloaded, %d already there, %d unavailable, %d failed",
                 downloads["downloaded"], downloads["reused"], downloads["unavailable"], downloads["failed"])  # fmt: skip
        for failure in downloads["failures"]:
            log.warning("file %s of %s not downloaded: %s", failure["kind"], failure["document_id"], failure["reason"])
    return {
        "report_html": display(outputs.paths.report_html),
        "documents_csv": display(outputs.paths.documents_csv),
        "documents_parquet": display(outputs.paths.documents_parquet),
        "downloads": downloads,
    }


async def publish_report_link(report_html: str, campaign: str, *, prefix: str = "bulk-check") -> UUID | None:
    """A link artifact to ``report.html`` (never fails the run: the page is already written): a
    ``file://`` URL for a local page, the object's own URL on a store, or a presigned link with
    its expiry in the description (``DOCCHECK_ARTIFACT_LINKS=presigned``)."""
    from prefect.artifacts import acreate_link_artifact

    try:
        link = artifact_link(report_html)
        if link.presigned:
            where = f"a presigned link to the object in the bucket, {link.expiry_text()}"
        else:
            where = "the object in the bucket" if is_url(report_html) else "open the file in a browser"
        return await acreate_link_artifact(
            link=link.url,
            link_text=f"report.html · {escape_markdown(campaign)}",  # the campaign is user input
            key=artifact_key(campaign, "report", prefix),
            description=f"{prefix} {campaign}: the instructor's report page ({where})",
        )
    except Exception as exc:  # noqa: BLE001 - the UI is a view; the run goes on
        log.warning("could not create the report link artifact: %s", type(exc).__name__)
        return None
