"""``doccheck run MANIFEST``: one run, as the ``bulk_check`` flow when a Prefect server is there to
watch it, else with the library's steps in this process (``local_run``; same ledger, reports and
exit codes, no temporary Prefect server). ``--prefect`` / ``--no-prefect`` force either.

Against ``DOCCHECK_BASE_URL`` / ``DOCCHECK_API_KEY`` (or ``--base-url``). A progress bar
while it runs, a summary table at the end. Exit 0 when the run finished (rows refused by
the service or rejected by validation are data in the reports); exit 1 with a one-line
error for configuration or fatal errors (no base URL or key, 401, unreadable manifest);
exit 3 when the run is incomplete: documents still unsent at the submit deadline (429,
5xx or network errors that outlasted it, or keys another run was sending), with a
one-line hint to run the same command again (nothing is charged twice).

The flow is imported inside the function that runs it: ``doccheck`` must not import Prefect until a
command that runs a flow is actually invoked.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from doccheck.commands._local_run import run_without_prefect, use_prefect
from doccheck.commands._pyarrow_without_pandas import keep_pandas_unloaded
from doccheck.commands._runner import (
    LOCAL_PREFECT_HOME,
    fail,
    ledger_label,
    one_line_errors,
    out_location,
    quiet_prefect,
    rejections_table,
    require_service_settings,
    run_flow,
    summary_table,
    use_local_prefect_server_if_running,
)
from doccheck.pipeline import DEFAULTS, RunOptions, option_error

#: Exit status of a run that left documents unsent (documented in README and the docstring).
EXIT_INCOMPLETE = 3


_D = DEFAULTS  # every flag's default comes from the one options model (doccheck.pipeline._options)


_PRODUCTS = ",".join(_D.source.products)
_OUT = _D.output.out_dir

ManifestOption = Annotated[
    str,  # not a Path: a URL (s3://bucket/course-a/manifest.csv) would be mangled into one (s3:/bucket/...)
    typer.Argument(
        help="CSV, Parquet or JSONL manifest (docs/manifest.md), a path or a URL such as "
        "s3://bucket/course-a/manifest.csv (docs/storage.md), or an LMS export: .zip or folder (docs/lms.md)."
    ),
]
ProductsOption = Annotated[
    str, typer.Option(help="Default products for rows without their own: ai, similarity or both (comma-separated).")
]
OutOption = Annotated[
    str,
    typer.Option(
        "--out", help="Where the reports go (a run folder + latest/): a folder, or a URL such as s3://bucket/reports."
    ),
]
CampaignOption = Annotated[
    str | None, typer.Option(help="Namespace of the Idempotency-Keys (default: the manifest's file name).")
]
ConcurrencyOption = Annotated[int, typer.Option(min=1, max=64, help="Requests in flight at once.")]
WaitOption = Annotated[bool, typer.Option("--wait/--no-wait", help="Wait for the results before writing reports.")]
MaxSpendCentsOption = Annotated[
    int | None, typer.Option(min=0, help="The campaign's budget: stop before this many cents would be spent.")
]
MetadataColumnsOption = Annotated[
    str, typer.Option(help="Manifest columns sent to the service as metadata (comma-separated allowlist).")
]
DatabaseUrlOption = Annotated[
    str | None, typer.Option(help="Ledger database (default DOCCHECK_DATABASE_URL or sqlite:///doccheck.db).")
]
BaseUrlOption = Annotated[
    str | None, typer.Option(help="Service base URL ending in /api/v1 (default DOCCHECK_BASE_URL).")
]
WebhookUrlOption = Annotated[str | None, typer.Option(help="Per-check webhook URL (default: the account's webhook).")]
GraceSecondsOption = Annotated[float, typer.Option(min=0, help="Seconds without a webhook before polling a check.")]
PollIntervalOption = Annotated[
    float, typer.Option(min=0.05, help="Seconds between checks of the ledger while waiting.")
]
DownloadOption = Annotated[
    str,
    typer.Option(
        help="Also fetch these files of finished checks into <run>/files/: similarity_pdf, pdf, original (comma-separated)."
    ),
]
SubmitDeadlineOption = Annotated[
    float,
    typer.Option(min=0, help="Seconds to keep retrying documents that met 429/5xx/network errors (then exit 3)."),
]
TemplateOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--template",
        exists=True,
        dir_okay=False,
        readable=True,
        help="A file every student was given (prompt, template): cohort matching ignores its text. Repeatable.",
    ),
]
ShardsOption = Annotated[
    int,
    typer.Option(
        min=1,
        max=1024,
        help="Split the submission into N runs of the bulk-check-shard deployment on its work pool "
        "(PREFECT_API_URL must name the server; the ledger must be PostgreSQL). 1: this process.",
    ),
]
PrefectOption = Annotated[
    bool | None,
    typer.Option(
        "--prefect/--no-prefect",
        help="Run as a Prefect flow (shown in the Prefect UI) or in this process. "
        "Default: a flow when PREFECT_API_URL is set or the demo's Prefect server runs.",
        show_default=False,
    ),
]
OverlapOption = Annotated[
    bool,
    typer.Option(
        "--overlap/--no-overlap",
        help="Send each recorded batch while later ones are still read and recorded (--no-overlap: record the "
        "whole manifest first, then send it batch by batch, one task run a batch in a flow).",
    ),
]
LmsOption = Annotated[
    str | None, typer.Option(help="Read MANIFEST as this LMS's export: moodle, canvas, blackboard or plain.")
]
RosterOption = Annotated[
    str | None,  # not a Path: a URL (s3://bucket/grades.csv) would be mangled into one (s3:/bucket/...)
    typer.Option(help="The LMS's gradebook / grading worksheet CSV, a path or a URL: lists who has no submission."),
]
ReferenceCampaignOption = Annotated[
    str | None,
    typer.Option(help="An earlier campaign of known-human work: the report states the flags expected by chance."),
]
MaxFalseFlagRateOption = Annotated[
    float | None,
    typer.Option(
        min=0.0, max=1.0,
        help="Choose the AI flag threshold from the reference campaign: the lowest score at which at most this "
        "share of its known-human documents would be flagged (needs --reference-campaign; default: "
        "--ai-band-elevated).",
    ),
]  # fmt: skip
MinAiWordsOption = Annotated[
    int, typer.Option(min=0, help="Documents under this many words are 'too short to judge' and never AI-flagged.")
]
AiBandElevatedOption = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="AI score where the band 'elevated' (and the AI flag) starts.")
]
AiBandHighOption = Annotated[float, typer.Option(min=0.0, max=1.0, help="AI score where the band 'high' starts.")]

GroupByOption = Annotated[
    str | None,
    typer.Option(help="One report page per value of this column (e.g. section, or a --metadata-columns column)."),
]


def run(
    manifest: ManifestOption,
    products: ProductsOption = _PRODUCTS,
    out: OutOption = _OUT,
    campaign: CampaignOption = None,
    concurrency: ConcurrencyOption = _D.submission.concurrency,
    wait: WaitOption = _D.waiting.wait,
    wait_timeout: Annotated[float, typer.Option(min=0, help="Seconds to wait for results.")] = _D.waiting.timeout,
    max_spend_cents: MaxSpendCentsOption = None,
    metadata_columns: MetadataColumnsOption = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and print the plan; send nothing.")] = False,
    database_url: DatabaseUrlOption = None,
    base_url: BaseUrlOption = None,
    webhook_url: WebhookUrlOption = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Documents per Prefect task run.")] = _D.submission.batch_size,
    grace_seconds: GraceSecondsOption = _D.waiting.grace_seconds,
    poll_interval: PollIntervalOption = _D.waiting.poll_interval,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    download: DownloadOption = "",
    submit_deadline: SubmitDeadlineOption = _D.submission.submit_deadline,
    template: TemplateOption = None,
    shards: ShardsOption = 1,
    prefect: PrefectOption = None,
    overlap: OverlapOption = _D.submission.overlap,
    lms: LmsOption = None,
    attempts: Annotated[str, typer.Option(help="Blackboard exports: latest (default) or all attempts.")] = "latest",
    roster: RosterOption = None,
    reference_campaign: ReferenceCampaignOption = None,
    group_by: GroupByOption = None,
    max_false_flag_rate: MaxFalseFlagRateOption = None,
    min_ai_words: MinAiWordsOption = _D.output.min_ai_words,
    ai_band_elevated: AiBandElevatedOption = _D.output.ai_band_elevated,
    ai_band_high: AiBandHighOption = _D.output.ai_band_high,
) -> None:
    """Check every document of MANIFEST and write Parquet reports (a bulk_check flow run when a Prefect server is there, else in this process)."""
    console = Console()
    err = Console(stderr=True)
    from doccheck.storage import scratch_folder

    exports = scratch_folder(out_location(err, out)) / "exports"  # for a bucket: a local folder of this run
    manifest = export_manifest(console, err, manifest, exports, lms=lms, attempts=attempts, roster=roster)
    manifest = _readable_manifest(err, manifest)
    try:
        options = RunOptions.from_flat(
            manifest=str(manifest), products=products, out_dir=out, campaign=campaign, concurrency=concurrency,
            wait=wait, wait_timeout=wait_timeout, max_spend_cents=max_spend_cents, metadata_columns=metadata_columns,
            dry_run=dry_run, base_url=base_url, database_url=database_url, webhook_url=webhook_url,
            batch_size=batch_size, grace_seconds=grace_seconds, poll_interval=poll_interval, download=download,
            submit_deadline=submit_deadline, templates=[str(t) for t in template or []], shards=shards, overlap=overlap,
            reference_campaign=reference_campaign, group_by=group_by, max_false_flag_rate=max_false_flag_rate,
            min_ai_words=min_ai_words, ai_band_elevated=ai_band_elevated, ai_band_high=ai_band_high,
        )  # fmt: skip
    except ValidationError as exc:
        raise fail(err, option_error(exc)) from None
    keep_pandas_unloaded()  # ~32 MB of the run's peak (doccheck.commands._pyarrow_without_pandas)
    if dry_run:  # plans in this process: no flow, no Prefect server (issue 10)
        _print_summary(console, _dry_run(err, options))
        console.print("dry run: nothing was sent.")
        return
    require_service_settings(err, base_url, database_url)
    if use_prefect(prefect, LOCAL_PREFECT_HOME):
        summary = _run_flow(console, err, options, progress)
    else:
        with one_line_errors(err, ledger=ledger_label(options.connection.database_url)):
            summary = run_without_prefect(options, console, show_progress=progress)
    _print_summary(console, summary)
    _print_outcome(console, summary, manifest)


def _readable_manifest(err: Console, manifest: str) -> str:
    """The manifest's location as the run records it (a URL as ``display`` shows it), once it is
    known to be a file: a URL is resolved here, at the entry (a credential in it, an unknown
    scheme or a missing extra exits with one line), and asked of its store once (one HEAD)."""
    from doccheck.errors import StorageError
    from doccheck.storage import as_storage_error, describe, display, resolve

    try:
        location = resolve(manifest)
        with as_storage_error(location):
            entry = describe(location)
    except StorageError as exc:
        raise fail(err, f"cannot read manifest: {exc}") from None
    except OSError as exc:
        raise fail(err, f"cannot read manifest {display(manifest)!r}: {exc.strerror or type(exc).__name__}") from None
    if entry is None:
        raise fail(err, f"cannot read manifest {display(manifest)!r}: no such file")
    return manifest if isinstance(location, Path) else display(location)


def _print_outcome(console: Console, summary: Any, manifest: str) -> None:
    """What is left to do, in words; exit 3 (incomplete) when documents were not sent."""
    if summary.dry_run:
        console.print("dry run: nothing was sent.")
    elif summary.status == "pending":
        console.print(
            f"{summary.pending} products still pending: run `doccheck collect --run-id {summary.run_id}` later."
        )
    elif summary.status == "incomplete":
        unsent = summary.unsent_retry_later + summary.in_flight_elsewhere
        again = f"doccheck run {shlex.quote(manifest)} --campaign {shlex.quote(summary.campaign)}"
        if unsent:
            console.print(f"incomplete: {unsent} documents not sent yet; run `{again}` again to continue.")
        if summary.in_doubt:
            console.print(
                f"in doubt: {summary.in_doubt} documents may already have a (billed) check that could not be "
                f"found or ruled out, so they were not sent again; see "
                f"`doccheck resolve --campaign {shlex.quote(summary.campaign)}`."
            )
            for reason in summary.in_doubt_reasons:
                console.print(f"  why: {reason}", markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_INCOMPLETE)


def _run_flow(console: Console, err: Console, options: RunOptions, progress: bool) -> Any:
    """The run as a ``bulk_check`` flow run in this process (the Prefect UI shows it)."""
    quiet_prefect()
    use_local_prefect_server_if_running()

    def start():  # type: ignore[no-untyped-def]
        from doccheck.pipeline import prefect_integration

        return prefect_integration().bulk_check(**options.flow_parameters())

    return run_flow(console, err, start, show_progress=progress)


def export_manifest(
    console: Console, err: Console, path: str, work_dir: Path, *, lms: str | None, attempts: str, roster: str | None
) -> str:
    """An LMS export's derived manifest (its recognised summary printed before anything is sent), else ``path``."""
    from doccheck.sources.lms import as_manifest, no_submission_lines
    from doccheck.storage import display

    try:
        # the roster's email, section and "no submission" rows go in the reports (the export's sidecar)
        manifest, result = as_manifest(path, work_dir, lms=lms, attempts=attempts, roster=roster)
        missing = no_submission_lines(result, roster) if result is not None and roster is not None else []
    except (ValueError, OSError) as exc:
        raise fail(err, f"cannot read export {display(path)!r}: {exc}") from None  # never a URL's credential
    if result is not None:
        for line in [result.summary(), *result.not_checked(), *missing]:
            console.print(line, markup=False, highlight=False)
    return manifest


def _print_summary(console: Console, summary: Any) -> None:
    """The summary table, the rejected rows and the cohort pairs (a flow's summary or a dry run's)."""
    console.print(summary_table(summary))
    rejected = rejections_table(summary)
    if rejected is not None:
        console.print(rejected)
    from doccheck.matching import pairs_table

    pairs = pairs_table(summary.cohort_matches)
    if pairs is not None:
        console.print(pairs)


def _dry_run(err: Console, options: RunOptions) -> Any:
    """``doccheck.pipeline.planning._dry_run`` with the run's options; configuration errors exit with one line."""
    from doccheck.commands._runner import describe_error
    from doccheck.config import load_settings
    from doccheck.pipeline import dry_run

    source = options.source
    try:
        return dry_run(
            source.manifest,
            campaign=source.campaign,
            products=source.products,
            metadata_columns=source.metadata_columns,
            database_url=options.connection.database_url or load_settings().ledger.database_url,
            templates=source.templates,
            base_url=options.connection.base_url,
        )
    except Exception as exc:  # noqa: BLE001 - every fatal error becomes one line
        raise fail(err, describe_error(exc)) from None
