"""``run_checks`` with ``LocalSteps`` (the notebook's steps) against the emulator, streamed.

The manifest is recorded and cohort-matched in one read (``orchestrate.prepare_run``) and
sent batch by batch from references; the run's summary must say what the dry run of the same
manifest says (documents, rejections, modes, words, cost, cohort pairs), with every document
sent once and every product finished; on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import csv
import uuid
from contextlib import closing
from pathlib import Path

import pytest

from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import (
    BatchRef,
    LocalSteps,
    OutputOptions,
    RunOptions,
    RunSummary,
    SourceOptions,
    SubmissionOptions,
    WaitingOptions,
    dry_run,
    run_checks,
)
from tests.factories import random_essay, run_locally
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration]


ESSAY = random_essay(999)


def _manifest(folder: Path) -> Path:
    """22 valid essays (two of them near-duplicates) and one row without an id, as row 6."""
    rows: list[dict[str, str]] = [
        {"document_id": f"s-{i:02d}", "text": random_essay(i), "section": str(i % 2)} for i in range(20)
    ]
    rows.insert(5, {"document_id": "", "text": "a row without an id", "section": "1"})
    rows.append({"document_id": "copy-1", "text": ESSAY, "section": "0"})
    rows.append({"document_id": "copy-2", "text": ESSAY + " with a last sentence added", "section": "1"})
    path = folder / "term.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["document_id", "text", "section"])
        writer.writeheader()
        writer.writerows(rows)
    return path


def _options(manifest: Path, campaign: str, out: Path) -> RunOptions:
    return RunOptions(
        source=SourceOptions(manifest=str(manifest), campaign=campaign, products=["ai", "similarity"],
                             metadata_columns=["section"]),
        submission=SubmissionOptions(batch_size=5, concurrency=8, parallel_batches=2),
        waiting=WaitingOptions(timeout=30, grace_seconds=0, poll_interval=0.2),
        output=OutputOptions(out_dir=str(out)),
    )  # fmt: skip


def _same_run(database_url: str, emulator: EmulatorHandle, tmp_path: Path) -> None:
    key = emulator.new_account()
    manifest = _manifest(tmp_path)
    tag = uuid.uuid4().hex[:8]
    with closing(Ledger(database_url)) as ledger:
        one = asyncio.run(run_locally(ledger, emulator.base_url, key, _options(manifest, f"run-{tag}", tmp_path / "s")))
        planned = dry_run(manifest, campaign=f"run-{tag}", products=["ai", "similarity"], metadata_columns=["section"])
        assert one.status == "finished", one
        for name in ("documents", "rejected", "counts_by_mode", "total_words", "estimated_cost_cents"):
            assert getattr(one, name) == getattr(planned, name), name
        assert one.documents == 22 and one.rejected == 1 and one.submitted == 22 and one.pending == 0
        assert emulator.account_state(key)["checks"] == 22
        assert one.cohort_matches["pairs"] == planned.cohort_matches["pairs"] >= 1
        assert one.rejections == planned.rejections
        assert one.run_id is not None
        assert ledger.document_metadata(one.run_id)["s-03"] == {"document_id": "s-03", "section": "1"}
        assert one.report_dir and Path(one.report_dir, "submissions.parquet").exists()


def test_a_streamed_run_summarises_like_its_dry_run(emulator: EmulatorHandle, tmp_path: Path) -> None:
    _same_run(f"sqlite:///{tmp_path / 'ledger.db'}", emulator, tmp_path)


@pytest.mark.postgres
def test_a_streamed_run_on_postgres(emulator: EmulatorHandle, postgres_database: str, tmp_path: Path) -> None:
    _same_run(postgres_database, emulator, tmp_path)


def test_prepared_batches_are_refs_without_texts(tmp_path: Path) -> None:
    from doccheck.pipeline import prepare_run

    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        prepared = prepare_run(ledger, _options(_manifest(tmp_path), "refs", tmp_path))
    assert all(isinstance(b, BatchRef) for b in prepared.batches) and len(prepared.batches) == 5
    assert prepared.documents == 22 and prepared.products == 44 and prepared.cohort["pairs"] >= 1
    assert ESSAY[:40] not in repr(prepared)


class _FreezeWatchingSteps(LocalSteps):
    """LocalSteps that note whether older objects are frozen while the reports are written."""

    frozen_while_writing: int = -1

    async def write_outputs(self, summary: RunSummary, options: RunOptions) -> RunSummary:
        import gc

        self.frozen_while_writing = gc.get_freeze_count()
        return await super().write_outputs(summary, options)


def test_reports_are_written_with_older_objects_frozen(emulator: EmulatorHandle, tmp_path: Path) -> None:
    """Full collections skip what the run left alive while its reports are written (their
    time), and everything is collectable again once they are."""
    import gc

    key = emulator.new_account()
    options = _options(_manifest(tmp_path), f"gc-{uuid.uuid4().hex[:8]}", tmp_path / "out")
    options = options.model_copy(update={"waiting": WaitingOptions(wait=False)})

    async def run() -> tuple[RunSummary, _FreezeWatchingSteps]:
        async with AsyncDocCheckClient(emulator.base_url, key) as client:
            steps = _FreezeWatchingSteps(ledger, client)
            return await run_checks(options, steps), steps

    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        assert gc.get_freeze_count() == 0
        summary, steps = asyncio.run(run())
    assert summary.report_dir and steps.frozen_while_writing > 0
    assert gc.get_freeze_count() == 0
