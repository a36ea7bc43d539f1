"""The overlapped run's hand-over of recorded batches (``doccheck.pipeline._overlap._Handover``).

Each batch is handed over only once committed, with the very documents the recording planned;
a batch whose documents the consumer did not all see (it stopped early) is handed over as its
ref, to be re-read; past ``ahead`` batches waiting the recording waits, and a stop ends it.
"""

from __future__ import annotations

import asyncio
import csv
import itertools
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from doccheck.errors import RecordingStopped
from doccheck.ledger import DocumentRow, Ledger
from doccheck.pipeline._overlap import _Handover
from doccheck.pipeline.planning._batches import BatchRef, start_recording


def _manifest(folder: Path, rows: int) -> Path:
    path = folder / "m.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["document_id", "text"])
        for i in range(rows):
            writer.writerow([f"d-{i:02d}", f"essay number {i} " + "word " * 30])
    return path


def _committed(ledger: Ledger, run_id: str) -> int:
    with ledger.session() as s:
        return len(s.exec(select(DocumentRow).where(DocumentRow.run_id == run_id)).all())


def test_batches_are_handed_over_after_their_commit_with_their_documents(tmp_path: Path) -> None:
    async def scenario() -> list[Any]:
        with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
            handover = _Handover(asyncio.get_running_loop(), ahead=10)
            seen_at_handover: list[int] = []

            def recorded(ref: BatchRef) -> None:
                seen_at_handover.append(_committed(ledger, recording.run_id))
                handover.recorded(ref)

            recording = start_recording(ledger, _manifest(tmp_path, 25), batch_size=10, on_batch=recorded)

            def consume() -> None:
                for _ in itertools.islice(handover.documents(recording), 12):  # stops early, in batch 2
                    pass
                recording.finish()  # records the rest without the consumer

            await asyncio.to_thread(consume)
            handover.end()
            items = [item async for item in handover.items()]
            assert seen_at_handover == [10, 20, 25]  # each batch committed before it is handed over
            return items

    items = asyncio.run(scenario())
    assert [d.document_id for d in items[0]] == [f"d-{i:02d}" for i in range(10)]  # the planned documents
    assert isinstance(items[1], BatchRef) and items[1].number == 2  # not seen whole: re-read from the file
    assert isinstance(items[2], BatchRef) and items[2].number == 3


def test_a_full_handover_makes_the_recording_wait_and_a_stop_ends_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
            handover = _Handover(asyncio.get_running_loop(), ahead=1)
            recording = start_recording(ledger, _manifest(tmp_path, 40), batch_size=10, on_batch=handover.recorded)
            worker = asyncio.ensure_future(asyncio.to_thread(lambda: list(handover.documents(recording))))
            await asyncio.sleep(0.5)
            assert not worker.done()  # batch 1 waits unread; batch 2's hand-over waits for room
            handover.stop.set()
            with pytest.raises(RecordingStopped):
                await worker

    asyncio.run(scenario())
