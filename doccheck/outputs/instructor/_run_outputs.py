"""One call after a run's Parquet reports: fetch the requested files, then write the
instructor's files. Shared by the Prefect task (``prefect_doccheck.tasks._instructor``) and the notebook, so
both produce the same folder."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doccheck.guards import naming
from doccheck.outputs._calibration import AiRules
from doccheck.outputs._downloads import DownloadResult, FileClient, download_files, parse_kinds, targets_from_rows
from doccheck.outputs._report_folders import FILES_SUBDIR, final_dir, work_dir
from doccheck.outputs._reuse import FolderInputs, files_digest, read_inputs, write_inputs
from doccheck.outputs._term_catalog import refresh_catalog, write_run_file
from doccheck.outputs.instructor._evidence_texts import manifest_texts
from doccheck.outputs.instructor._instructor_files import (
    InstructorPaths,
    names_from_ledger,
    read_run_tables,
    write_instructor_files,
)
from doccheck.storage import UserPath

#: The report columns the download targets are chosen from (read alone: the rest stays on disk).
TARGET_COLUMNS = ("document_id", "check_id", "products", "status")

__all__ = ["RunOutputs", "write_run_outputs"]


@dataclass(frozen=True)
class RunOutputs:
    """Where the instructor's files are, and what the downloads did (None: none asked)."""

    paths: InstructorPaths
    downloads: DownloadResult | None


async def write_run_outputs(
    run_dir: str | UserPath,
    latest_dir: str | UserPath | None,
    *,
    campaign: str,
    run_id: str | None = None,
    ledger: Any = None,
    client: FileClient | None = None,
    download: str | Sequence[str] | None = (),
    download_concurrency: int = 4,
    status: str | None = None,
    spent_cents: int | None = None,
    rules: Mapping[str, Any] | None = None,
    group_by: str | None = None,
) -> RunOutputs:
    """Download ``download`` kinds of every finished check of the run (needs ``client``),
    then write ``report.html`` and ``documents.parquet``/``.csv`` (run folder + latest),
    built from the run folder's reports in chunks (see ``write_instructor_files``).

    ``rules``: the ``OutputOptions`` AI fields (:data:`~doccheck.outputs._calibration.RULE_OPTIONS`);
    the reference campaign's AI scores are read from ``ledger`` (none without one: rate unknown).
    ``group_by``: a column with one report page per value (``--group-by``; else ``rules["group_by"]``)."""
    kinds = parse_kinds(download)
    result: DownloadResult | None = None
    if kinds:
        if client is None:
            raise ValueError("downloading files needs a client")
        folder = work_dir(run_dir)  # a staged run's ``.partial`` folder until the page is written
        targets = targets_from_rows(read_run_tables(folder, columns=TARGET_COLUMNS))
        result = await download_files(client, targets, kinds, folder, concurrency=download_concurrency)
    # Names and decisions are read per chunk of the wide table, not the run's at once; decisions
    # not at all when the campaign has none (a term's 100 chunks were 100 joins that found nothing).
    names_of = dispositions_of = None
    if ledger is not None and run_id is not None:
        rid: str = run_id
        names_of = lambda ids: names_from_ledger(ledger, rid, ids)  # noqa: E731
        if hasattr(ledger, "has_dispositions") and ledger.has_dispositions(rid):
            dispositions_of = lambda ids: ledger.dispositions_of_run(rid, ids)  # noqa: E731
    ai_rules = AiRules.from_options(rules)
    reference: list[float] = []
    if ai_rules.reference_campaign and ledger is not None:
        reference = ledger.ai_scores(ai_rules.reference_campaign, min_words=ai_rules.bounds.min_words)
    grouping = group_by or (rules or {}).get("group_by")
    with naming(work_dir(run_dir)):  # a full disk names the folder being written
        reuse_from = _reusable(work_dir(run_dir), final_dir(run_dir).parent, rules, reference, grouping)
        if run_id is not None:
            _write_run_file(work_dir(run_dir), ledger, campaign=campaign, run_id=run_id, status=status)
        paths = write_instructor_files(
            run_dir,
            latest_dir,
            campaign=campaign,
            run_id=run_id,
            status=status,
            names_of=names_of,
            download_failures=[f.__dict__ for f in result.failures] if result else (),
            spent_cents=spent_cents,
            rules=ai_rules,
            reference_scores=reference,
            dispositions_of=dispositions_of,
            group_by=grouping,
            texts_for=(lambda pairs: manifest_texts(ledger, run_id, pairs)) if ledger is not None and run_id else None,
            reuse_from=reuse_from,
        )
    refresh_catalog(final_dir(run_dir).parent)  # the term's catalog, after every run and collect
    return RunOutputs(paths, result)


def _reusable(
    folder: Path, out: UserPath, rules: Mapping[str, Any] | None, reference: Sequence[float], group_by: str | None
) -> UserPath | None:
    """Record the folder's ``files`` digest (:mod:`doccheck.outputs._reuse`) beside its
    ``reports`` one; the earlier folder its reports were taken from, when its files were built
    from the same inputs too (else None: the files are built)."""
    own = read_inputs(folder)
    if own is None:  # reports not from a ledger's run: nothing to compare
        return None
    downloaded = folder / FILES_SUBDIR
    files = files_digest(
        own.reports,
        rules=dict(rules or {}),
        reference=hashlib.blake2b(array("d", reference).tobytes(), digest_size=20).hexdigest(),
        group_by=group_by,
        downloaded=sorted(str(p.relative_to(downloaded)) for p in downloaded.rglob("*")) if downloaded.is_dir() else [],
    )
    write_inputs(folder, FolderInputs(own.reports, files, own.reused))
    if own.reused is None:
        return None
    previous = out / own.reused
    prior = read_inputs(previous)
    return previous if prior is not None and prior.files == files else None


def _write_run_file(folder: Path, ledger: Any, *, campaign: str, run_id: str, status: str | None) -> None:
    """The folder's ``run.json`` (the catalog's run metadata), with the ledger's times when known."""
    run = ledger.get_run(run_id) if ledger is not None else None
    write_run_file(folder, run_id=run_id, campaign=campaign, status=status or getattr(run, "status", None),
                   started_at=getattr(run, "started_at", None), finished_at=getattr(run, "finished_at", None))  # fmt: skip
