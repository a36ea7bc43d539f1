"""``record_plan`` / ``load_batch`` on a real PostgreSQL ledger, and a streamed real run against the emulator.

The unit tests prove the batches on SQLite; here the same contract holds on PostgreSQL
(JSON columns, the grouped inserts, the ``IN`` look-ups), and a run sent batch by batch
(record once, re-read each batch, ``submit_batch``) ends with every document checked and
a rerun of the same refs free of charge.
"""

from __future__ import annotations

import asyncio
from contextlib import closing
from pathlib import Path

import pytest

from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import BatchResult, SubmitOptions, WaitResult, submit_ref, wait_for_results
from doccheck.pipeline.planning._batches import MANIFEST_CHANGED, RecordedPlan, read_batch, record_plan
from tests.unit.pipeline.test_batches import (
    _check_recorded_like_load_plan,
    _check_recording_is_idempotent,
    _write_csv,
    _write_jsonl,
    _write_parquet,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_recorded_batches_reload_like_load_plan_on_postgres(postgres_database: str, tmp_path: Path) -> None:
    with closing(Ledger(postgres_database)) as ledger:
        _check_recorded_like_load_plan(
            ledger, _write_csv(tmp_path / "t.csv", bom=True, newline="\r\n"), 2, metadata_columns="section"
        )
        _check_recorded_like_load_plan(ledger, _write_jsonl(tmp_path / "t.jsonl"), 3, metadata_columns="section")
        _check_recorded_like_load_plan(ledger, _write_parquet(tmp_path / "t.parquet"), 4)


def test_recording_is_idempotent_on_postgres(postgres_database: str, tmp_path: Path) -> None:
    with closing(Ledger(postgres_database)) as ledger:
        _check_recording_is_idempotent(ledger, tmp_path)


async def _send(base_url: str, api_key: str, ledger: Ledger, recorded: RecordedPlan) -> BatchResult:
    """Batch by batch, as the orchestration does: re-read one ref, submit its documents."""
    total = BatchResult()
    async with AsyncDocCheckClient(base_url, api_key) as client:
        for ref in recorded.batches:
            total = total.merge(
                await submit_ref(client, ledger, recorded.run_id, recorded.manifest, ref, metadata_columns="section",
                                 options=SubmitOptions(concurrency=4))
            )  # fmt: skip
    return total


def test_a_streamed_real_run_on_postgres(emulator: object, postgres_database: str, tmp_path: Path) -> None:
    api_key = emulator.new_account()  # type: ignore[attr-defined]
    base_url = emulator.base_url  # type: ignore[attr-defined]
    manifest = tmp_path / "term.csv"
    rows = ["document_id,text,section"] + [
        f"s-{i:03d},essay {i} about the river and the town,{i % 3}" for i in range(25)
    ]
    rows.insert(8, ",no id here,1")
    manifest.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with closing(Ledger(postgres_database)) as ledger:
        recorded = record_plan(ledger, manifest, batch_size=7, metadata_columns="section", params={"batch_size": 7})
        assert [r.documents for r in recorded.batches] == [7, 7, 7, 4]
        first = asyncio.run(_send(base_url, api_key, ledger, recorded))
        assert (first.submitted, first.failed) == (25, 0)

        async def wait() -> WaitResult:
            async with AsyncDocCheckClient(base_url, api_key) as client:
                return await wait_for_results(client, ledger, recorded.run_id, timeout=20, poll_interval=0.1,
                                              grace_seconds=0)  # fmt: skip

        emulator.advance(2)  # type: ignore[attr-defined]
        assert not asyncio.run(wait()).timed_out
        tables = ledger.report_rows(run_id=recorded.run_id)
        assert len([r for r in tables["submissions"] if r["status"] == "submitted"]) == 25
        assert len(tables["ai_results"]) == 25 and all(r["status"] == "completed" for r in tables["ai_results"])
        assert ledger.document_metadata(recorded.run_id)["s-004"] == {"document_id": "s-004", "section": "1"}
        # A rerun of the same refs sends nothing and costs nothing.
        again = asyncio.run(_send(base_url, api_key, ledger, recorded))
        assert (again.submitted, again.already_done, again.cost_cents) == (0, 25, 0)
        # A row edited after planning (same length) is refused, not sent.
        manifest.write_bytes(manifest.read_bytes().replace(b"essay 24 about", b"ESSAY 24 about"))
        loaded = read_batch(ledger, recorded.run_id, manifest, recorded.batches[-1], metadata_columns="section")
        assert [f.document_id for f in loaded.failures] == ["s-024"]
        assert loaded.failures[0].code == MANIFEST_CHANGED and len(loaded.documents) == 3
