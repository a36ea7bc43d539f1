"""Phases that overlap (issue 26): batches are sent while later ones are still read, recorded and matched.

Against the emulator: the overlapped run and the sequential one (``LocalSteps(overlap=False)``)
end with the same ledger and summary; the first request leaves before the recording of the
manifest has finished (the recording thread is held after its first batch until a document has
been submitted: without overlap that would never happen); a fatal error at submit (a wrong key)
fails the run at once instead of waiting for the recording. The ``bulk_check`` flow overlaps the
same way in one task run, and its watchers (plan line, cohort, progress bar and artifact) see what
the sequential flow showed them.
"""

from __future__ import annotations

import asyncio
import csv
import threading
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import (
    ConnectionOptions,
    FatalSubmitError,
    LocalSteps,
    OutputOptions,
    OverlappingLocalSteps,
    RunObserver,
    RunOptions,
    RunSummary,
    SourceOptions,
    SubmissionOptions,
    WaitingOptions,
    run_checks,
)
from doccheck.pipeline import _overlap as overlap
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.prefect_server import eventually

pytestmark = [pytest.mark.integration]


def _manifest(folder: Path, rows: int) -> Path:
    path = folder / f"term-{uuid.uuid4().hex[:6]}.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["document_id", "text"])
        for i in range(rows):
            writer.writerow([f"d-{i:03d}", f"Essay {i} about topic {i * 7919 % 1000} " + f"word{i} " * 40])
    return path


def _options(manifest: Path, out: Path) -> RunOptions:
    return RunOptions(
        source=SourceOptions(manifest=str(manifest), campaign=f"ov-{uuid.uuid4().hex[:8]}"),
        submission=SubmissionOptions(batch_size=10, concurrency=8),
        waiting=WaitingOptions(wait=False),
        output=OutputOptions(out_dir=str(out)),
    )


async def _run(ledger: Ledger, base_url: str, key: str, options: RunOptions, overlapped: bool = True) -> RunSummary:
    async with AsyncDocCheckClient(base_url, key) as client:
        steps = OverlappingLocalSteps(ledger, client) if overlapped else LocalSteps(ledger, client)
        return await run_checks(options, steps, RunObserver())


def _same_either_way(database_url: str, emulator: EmulatorHandle, tmp_path: Path) -> None:
    key = emulator.new_account()
    manifest = _manifest(tmp_path, 60)
    with closing(Ledger(database_url)) as ledger:
        both = [
            asyncio.run(_run(ledger, emulator.base_url, key, _options(manifest, tmp_path / name), flag))
            for name, flag in (("overlapped", True), ("sequential", False))
        ]
        for summary in both:
            assert summary.status == "submitted" and summary.documents == 60 and summary.submitted == 60, summary
            assert summary.cohort_matches == both[0].cohort_matches
            assert summary.report_dir and Path(summary.report_dir, "submissions.parquet").exists()
            assert summary.run_id is not None
            counts = ledger.run_summary(summary.run_id)
            assert counts["submissions"] == {"submitted": 60}, counts
        fields = ("documents", "rejected", "counts_by_mode", "total_words", "estimated_cost_cents", "spent_cents")
        assert [getattr(both[0], f) for f in fields] == [getattr(both[1], f) for f in fields]
    assert emulator.account_state(key)["checks"] == 120  # two campaigns, each key sent once


def test_overlapped_and_sequential_runs_leave_the_same_ledger(emulator: EmulatorHandle, tmp_path: Path) -> None:
    _same_either_way(f"sqlite:///{tmp_path / 'ledger.db'}", emulator, tmp_path)


@pytest.mark.postgres
def test_overlapped_run_on_postgres(emulator: EmulatorHandle, postgres_database: str, tmp_path: Path) -> None:
    _same_either_way(postgres_database, emulator, tmp_path)


def _hold_recording(monkeypatch: pytest.MonkeyPatch, submitted: threading.Event) -> list[bool]:
    """The recording thread waits after its 2nd batch until ``submitted`` is set (60 s at most);
    the list returned says whether it was set in time, once the recording went on."""
    waited: list[bool] = []
    real = overlap.record_and_match

    def held(ledger: Ledger, options: RunOptions, recording: Any, documents: Any) -> Any:
        def gated() -> Any:
            for i, doc in enumerate(documents):
                if i == 20:  # the first batch (rows 1-10) is committed once row 11 was read
                    waited.append(submitted.wait(timeout=60))
                yield doc

        return real(ledger, options, recording, gated())

    monkeypatch.setattr(overlap, "record_and_match", held)
    return waited


def test_the_first_request_leaves_before_the_recording_ends(
    emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recording thread waits after its 2nd batch until a document is submitted."""
    key = emulator.new_account()
    submitted = threading.Event()
    waited = _hold_recording(monkeypatch, submitted)
    options = _options(_manifest(tmp_path, 50), tmp_path / "out")

    async def run() -> RunSummary:
        async with AsyncDocCheckClient(emulator.base_url, key) as client:
            steps = OverlappingLocalSteps(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}"), client,
                               on_submit=lambda done: submitted.set() if done else None)  # fmt: skip
            return await run_checks(options, steps)

    summary = asyncio.run(run())
    assert waited == [True]  # a document was submitted while 30 rows were still to be read
    assert summary.submitted == summary.documents == 50


@pytest.mark.prefect_server
def test_the_flow_overlaps_its_phases_and_shows_its_progress(
    prefect_server: Any, emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``bulk_check`` flow: one ``record and submit`` task run; a document is submitted
    while the recording is held mid-file; the progress bar (the CLI's listener) advances before
    the recording ends and ends at every document; the plan line, the cohort pair and the
    progress artifact are the flow run's, as in the sequential flow."""
    from prefect_doccheck.flows import drain_prefect
    from prefect_doccheck.flows.bulk_check import bulk_check
    from prefect_doccheck.tasks import artifact_key, listening

    monkeypatch.setenv("DOCCHECK_API_KEY", emulator.new_account())
    submitted = threading.Event()
    waited = _hold_recording(monkeypatch, submitted)
    manifest = _manifest(tmp_path, 49)
    with manifest.open("a", encoding="utf-8") as handle:  # row 50 repeats row 1: a pair for the cohort
        handle.write("d-copy," + manifest.read_text(encoding="utf-8").splitlines()[1].split(",", 1)[1] + "\n")
    options = _options(manifest, tmp_path / "out").model_copy(update={"connection": ConnectionOptions(
        base_url=emulator.base_url, database_url=f"sqlite:///{tmp_path / 'ledger.db'}")})  # fmt: skip
    events: list[tuple[int, int]] = []

    def listener(event: Any) -> None:
        if event.phase == "submit":
            events.append((event.done, event.total))
            if event.done:
                submitted.set()

    with listening(listener):
        summary = asyncio.run(bulk_check(**options.flow_parameters()))
    assert waited == [True]  # a document was submitted while 30 rows were still to be read
    assert summary.status == "submitted" and summary.submitted == summary.documents == 50
    assert summary.cohort_matches["identical"] == 1, summary.cohort_matches
    assert any(done > 0 and total < 50 for done, total in events), events  # counted before the recording ended
    assert events[-1] == (50, 50) and [d for d, _ in events] == sorted(d for d, _ in events)

    drain_prefect()
    api = prefect_server.api_url
    runs = httpx.post(f"{api}/flow_runs/filter", json={"flow_runs": {"name": {"any_": [
        f"bulk-check {options.source.campaign_name}"]}}}).json()  # fmt: skip
    assert len(runs) == 1 and runs[0]["state_type"] == "COMPLETED"
    this_run = {"flow_runs": {"id": {"any_": [runs[0]["id"]]}}}
    tasks = eventually(  # task runs, logs and events reach the server from background workers: waited for
        lambda: httpx.post(f"{api}/task_runs/filter", json=this_run).json(),
        lambda found: any(t["name"].startswith("record and submit ") for t in found),
    )
    assert sum(t["name"].startswith("record and submit ") for t in tasks) == 1, [t["name"] for t in tasks]
    lines = ("plan for ov-", "cohort matching: 1 pairs", "submitted: 50 new")
    logs = eventually(
        lambda: [
            r["message"]
            for r in httpx.post(f"{api}/logs/filter", json={"logs": {"flow_run_id": {"any_": [runs[0]["id"]]}}}).json()
        ],  # fmt: skip
        lambda found: all(any(m.startswith(line) for m in found) for line in lines),
    )
    for line in lines:
        assert any(m.startswith(line) for m in logs), (line, logs)
    keys = [artifact_key(summary.campaign, kind) for kind in ("progress", "cohort")]
    found = eventually(
        lambda: httpx.post(f"{api}/artifacts/filter", json={"artifacts": {"key": {"any_": keys}}}).json(),
        lambda found: len(found) == len(keys),
    )
    by_key = {a["key"]: a for a in found}
    assert set(by_key) == set(keys) and float(by_key[keys[0]]["data"]) == 100.0, found


def test_a_fatal_submit_error_stops_the_recording(emulator: EmulatorHandle, tmp_path: Path) -> None:
    options = _options(_manifest(tmp_path, 400), tmp_path / "out")
    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger, pytest.raises(FatalSubmitError):
        asyncio.run(_run(ledger, emulator.base_url, "dc_wrong_key", options))
