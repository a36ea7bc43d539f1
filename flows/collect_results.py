"""The ``collect_results`` flow: poll what is still pending and rewrite a run's reports.

Why a flow of its own: results that arrive after ``bulk_check`` stopped waiting (a
timeout, ``wait=False``, a receiver outage, dropped deliveries) are picked up here, on a
schedule or by hand, from the ledger alone — the manifest is not needed any more.
"""

from __future__ import annotations

import time

from prefect import flow, get_run_logger

from doccheck.client import ConfigurationError
from doccheck.outputs import parse_kinds, rules_from_params, run_label
from doccheck.pipeline import RunSummary, as_list, collected_summary, describe_poll_errors, ledger_for, runs_to_collect
from prefect_doccheck.credentials import DocCheckCredentials
from prefect_doccheck.tasks import (
    base_url_of,
    emit_run_events,
    instructor_report,
    poll_results,
    publish_report_link,
    publish_run_artifacts,
    resolve_api_key,
    resolve_base_url,
    resolve_credentials,
    resolve_database_url,
    tag_flow_run,
    under_storage_block,
    write_run_reports,
)


def _flow_run_name() -> str:
    from prefect.runtime import flow_run

    params = flow_run.parameters
    target = params.get("campaign") or (f"run {str(params.get('run_id'))[:8]}" if params.get("run_id") else "?")
    return f"collect-results {target}"


# The DocCheckStorage block named by DOCCHECK_STORAGE_BLOCK holds the storage options for the whole collect
# (tasks/_storage_block.py; the decorator is Any to mypy, as every name of prefect_doccheck.tasks).
@flow(name="collect-results", flow_run_name=_flow_run_name, validate_parameters=True)
@under_storage_block  # type: ignore[untyped-decorator]
async def collect_results(
    campaign: str | None = None,
    run_id: str | None = None,
    out_dir: str = "reports",
    base_url: str | None = None,
    database_url: str | None = None,
    api_key_block: str | None = None,
    download: list[str] | str = [],  # noqa: B006
    credentials: DocCheckCredentials | str | None = None,
) -> RunSummary:
    """Poll every pending product of a run (``run_id``) or of every run of ``campaign``,
    and rewrite the reports of the runs concerned (a new run folder each; ``latest/`` is
    the latest run's). By campaign, ``pending`` counts the whole campaign. ``download`` as in
    ``bulk_check`` (files already fetched by an earlier run are reused, not fetched again)."""
    started = time.monotonic()
    logger = get_run_logger()
    if not campaign and not run_id:  # before any credentials are looked up
        raise ConfigurationError("give a campaign or a run id")
    parse_kinds(as_list(download))
    key_source = await resolve_credentials(credentials, api_key_block)
    base = resolve_base_url(base_url or base_url_of(key_source))
    resolve_api_key(key_source)
    db_url = resolve_database_url(database_url)
    ledger = ledger_for(db_url)
    run, earlier = runs_to_collect(ledger, campaign=campaign, run_id=run_id)
    await tag_flow_run(f"campaign:{run.campaign}")  # the flow run's, not its task runs' (see run_tags)
    polled = await poll_results(
        run.id if run_id else None,
        campaign=None if run_id else run.campaign,
        base_url=base,
        database_url=db_url,
        api_key_block=key_source,
    )
    logger.info("polled %d checks, %d products updated, %d errors", polled.polled, polled.updated, len(polled.errors))
    for other in earlier:  # latest/ stays the latest run's: only its complete folder is swapped in
        write_run_reports(db_url, other, out_dir, run_label(run.campaign, other), latest=False)
    # staged: the folder and latest/ are published by the instructor report, once complete
    paths = write_run_reports(db_url, run.id, out_dir, run_label(run.campaign, run.id), staged=True)
    summary = collected_summary(ledger, run, paths, by_campaign=not run_id, runs_collected=1 + len(earlier),
                                started=started)  # fmt: skip
    summary.orchestration = "Prefect flow run"
    summary.poll_errors = describe_poll_errors(polled.errors)
    outputs = await instructor_report(
        summary.report_dir, summary.latest_dir, campaign=run.campaign, run_id=run.id, database_url=db_url,
        base_url=base, api_key_block=key_source, download=as_list(download), status=summary.status,
        rules=rules_from_params(run.params),  # the rules the run was judged with, not the defaults
    )  # fmt: skip
    summary.report_html, summary.downloads = outputs["report_html"], outputs["downloads"]
    logger.info("summary: %s", summary.model_dump_json())
    await publish_run_artifacts(summary.model_dump(mode="json"), prefix="collect-results")
    emit_run_events(summary)  # flags found since the run, and whether it is complete now
    await publish_report_link(outputs["report_html"], run.campaign, prefix="collect-results")
    return summary
