"""The service's files of a run, fetched from the real emulator over sockets: every file
streamed into ``<run>/files/``, a rerun fetching nothing again, and failed downloads
(emulator fault injection) reported per document without sinking the run."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

import doccheck
from doccheck.client import AsyncDocCheckClient, RetryPolicy
from doccheck.outputs import DownloadTarget, download_files
from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration

TEXTS = [
    "Rivers carve valleys over thousands of years, moving sand grain by grain toward the sea.",
    "The lighthouse keeper climbed the spiral stairs each evening to light the great lamp.",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in the leaf.",
]


class CountingTransport(httpx.AsyncHTTPTransport):
    """A real socket transport that counts the file requests it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.file_requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if "/files/" in request.url.path:
            self.file_requests += 1
        return await super().handle_async_request(request)


def _params(emulator: EmulatorHandle, key: str, tmp_path: Path) -> dict[str, Any]:
    return dict(
        text_column="body", id_column="sid", products=["ai", "similarity"], metadata_columns=["student"],
        base_url=emulator.base_url, api_key=key, campaign=f"dl-{uuid.uuid4().hex[:8]}",
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}", grace_seconds=0, poll_interval=0.2, timeout=60,
        out_dir=tmp_path / "reports", download="similarity_pdf,pdf,original",
    )  # fmt: skip


def test_run_downloads_every_file_and_a_rerun_fetches_nothing(emulator: EmulatorHandle, tmp_path: Path) -> None:
    key = emulator.new_account()
    df = pd.DataFrame({"sid": ["s/1", "s 2", "s3"], "body": TEXTS, "student": ["Ana", "<b>Bo</b>", "Cy"]})
    first = doccheck.check_dataframe(df, **_params(emulator, key, tmp_path))
    assert first.summary["downloads"] == {"downloaded": 9, "reused": 0, "unavailable": 0, "failed": 0, "failures": []}
    run_dir = first.report_html.parent
    files = sorted(p.name for p in (run_dir / "files").iterdir())
    assert len(files) == 9 and not any(name.startswith(".") for name in files)
    assert all("/" not in name and " " not in name for name in files)
    for name in files:
        if name.endswith(".pdf.pdf"):
            assert (run_dir / "files" / name).read_bytes().startswith(b"%PDF")
    docs = first.documents.set_index("document_id")
    original = run_dir / str(docs.loc["s3", "file_original"])
    assert original.read_text() == TEXTS[2]  # the original bytes, as sent
    html = first.report_html.read_text()
    for rel in docs["file_similarity_pdf"]:
        assert f'href="{rel}"' in html
    assert "&lt;b&gt;Bo&lt;/b&gt;" in html
    latest = (tmp_path / "reports" / "latest" / "report.html").read_text()
    assert f'href="../{run_dir.name}/{docs.loc["s3", "file_pdf"]}"' in latest

    again = doccheck.check_dataframe(df, **_params(emulator, key, tmp_path) | {"campaign": first.campaign})
    assert again.summary["submitted"] == 0
    assert again.summary["downloads"]["downloaded"] == 0 and again.summary["downloads"]["reused"] == 9
    rerun_dir = again.report_html.parent
    assert rerun_dir != run_dir and len(list((rerun_dir / "files").iterdir())) == 9


def test_failed_downloads_are_reported_per_file_and_fetched_on_the_next_try(
    emulator_faults: EmulatorHandle, tmp_path: Path
) -> None:
    emulator = emulator_faults
    key = emulator.new_account()
    df = pd.DataFrame({"sid": ["a", "b", "c"], "body": TEXTS, "student": ["A", "B", "C"]})
    params = _params(emulator, key, tmp_path) | {"download": ()}
    result = doccheck.check_dataframe(df, **params)  # checks done, no file yet
    targets = [DownloadTarget(str(r.document_id), str(r.check_id)) for r in result.submissions.itertuples()]
    run_dir = tmp_path / "run"
    targets.append(DownloadTarget("ghost", "chk_does_not_exist"))

    async def fetch(error_rate: float) -> tuple[Any, int]:
        transport = CountingTransport()
        emulator.set_faults(error_rate=error_rate)
        try:
            async with AsyncDocCheckClient(
                emulator.base_url, key, transport=transport, retry=RetryPolicy(max_attempts=2, initial=0.01)
            ) as client:
                outcome = await download_files(client, targets, ["pdf", "original"], run_dir, concurrency=3)
        finally:
            emulator.reset_faults()
        return outcome, transport.file_requests

    failed, sent = asyncio.run(fetch(1.0))
    assert failed.downloaded == 0 and sent == 2 * 8  # every file tried twice (the retry policy), none written
    assert len(failed.failures) == 8 and {f.document_id for f in failed.failures} == {"a", "b", "c", "ghost"}
    assert all(f.code and f.reason and ("500" in f.reason or "503" in f.reason) for f in failed.failures)
    assert key not in " ".join(f.reason for f in failed.failures)
    assert failed.unavailable == []
    assert not list((run_dir / "files").iterdir())  # nothing half-written

    recovered, sent = asyncio.run(fetch(0.0))
    assert recovered.downloaded == 6 and recovered.failures == [] and sent == 8
    assert sorted(recovered.unavailable) == [("ghost", "original"), ("ghost", "pdf")]
    again, sent = asyncio.run(fetch(0.0))
    assert again.downloaded == 0 and again.reused == 6 and sent == 2  # only the ghost is asked again


def test_oversize_file_is_refused_and_leaves_nothing(emulator: EmulatorHandle, tmp_path: Path) -> None:
    key = emulator.new_account()
    df = pd.DataFrame({"sid": ["big"], "body": [TEXTS[0] * 20], "student": ["A"]})
    result = doccheck.check_dataframe(df, **_params(emulator, key, tmp_path) | {"download": ()})
    target = DownloadTarget("big", str(result.submissions["check_id"].iloc[0]))

    async def fetch() -> Any:
        async with AsyncDocCheckClient(emulator.base_url, key) as client:
            return await download_files(client, [target], ["original"], tmp_path / "run", max_bytes=100)

    outcome = asyncio.run(fetch())
    assert [(f.document_id, f.code) for f in outcome.failures] == [("big", "file_too_large")]
    leftovers = [p.name for p in (tmp_path / "run" / "files").iterdir()] + [
        p.name for p in (tmp_path / ".files-cache").iterdir()
    ]
    assert leftovers == []
