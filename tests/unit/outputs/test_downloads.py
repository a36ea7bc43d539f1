"""``doccheck.outputs._downloads`` without a service: kinds, safe names, targets, and the cache /
resume / failure bookkeeping over a fake client (the real one is tested end to end in
tests/integration/test_downloads.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from doccheck.errors import NotFoundError, ServerError
from doccheck.guards import safe_file_stem
from doccheck.outputs._downloads import (
    DownloadTarget,
    download_files,
    files_of,
    parse_kinds,
    targets_from_rows,
)


def test_parse_kinds_orders_and_refuses_typos() -> None:
    assert parse_kinds("original, pdf") == ("pdf", "original")
    assert parse_kinds(["similarity_pdf,pdf"]) == ("similarity_pdf", "pdf")
    assert parse_kinds("") == () and parse_kinds(None) == ()
    with pytest.raises(ValueError, match="'pfd'"):
        parse_kinds("pfd")


@pytest.mark.parametrize(
    "document_id", ["../../etc/passwd", "a/b", "CON", ".hidden", "x" * 300, "Zoë", "a b", "", "\x00"]
)
def test_safe_file_stem_stays_in_the_folder_and_is_unique(document_id: str) -> None:
    stem = safe_file_stem(document_id)
    assert stem and "/" not in stem and not stem.startswith(".") and len(stem) <= 100
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in stem)
    if (
        document_id
        and document_id == document_id.strip("._")
        and document_id != "CON"
        and all(c.isascii() and (c.isalnum() or c in "._-") for c in document_id)
        and len(document_id) <= 100
    ):
        assert stem == document_id
    assert safe_file_stem("a/b") != safe_file_stem("a_b")  # never two documents in one file
    assert safe_file_stem("CON") != "CON" and safe_file_stem("con.txt").startswith("con.txt-")


def test_targets_skip_pending_checks_and_rejected_rows(tmp_path: Path) -> None:
    tables = {
        "submissions": [
            {"document_id": "a", "check_id": "c1"},
            {"document_id": "b", "check_id": "c2"},
            {"document_id": "r", "check_id": None, "status": "rejected"},
        ],
        "ai_results": [{"check_id": "c1", "status": "completed"}, {"check_id": "c2", "status": "completed"}],
        "similarity_results": [{"check_id": "c2", "status": "pending"}],
    }
    tables["submissions"][0]["products"] = ["ai"]
    assert targets_from_rows(tables) == [DownloadTarget("a", "c1", ("ai",))]
    client = FakeClient()
    ai_only = asyncio.run(download_files(client, targets_from_rows(tables), ["similarity_pdf"], Path(tmp_path)))
    assert client.calls == [] and ai_only.unavailable == [("a", "similarity_pdf")]


class FakeClient:
    """Writes a small file per request; ``fail`` kinds raise, ``missing`` ones are 404s."""

    def __init__(self, fail: set[str] = frozenset(), missing: set[str] = frozenset()) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail, self.missing = fail, missing

    async def download_file(
        self, check_id: str, kind: str, dest: str | Path, *, max_bytes: int | None = None
    ) -> str | None:
        self.calls.append((check_id, kind))
        if kind in self.fail:
            raise ServerError("boom", status_code=503, code="service_unavailable")
        if kind in self.missing:
            raise NotFoundError("no such file", status_code=404, code="not_found")
        Path(dest).write_bytes(f"{check_id}:{kind}".encode())
        return "text/plain; charset=utf-8" if kind == "original" else "application/pdf"


def test_cache_resume_failures_and_shared_checks(tmp_path: Path) -> None:
    targets = [DownloadTarget("a", "c1"), DownloadTarget("b/../x", "c2"), DownloadTarget("twin", "c1")]
    run1 = tmp_path / "run1"
    client = FakeClient(fail={"pdf"}, missing={"similarity_pdf"})
    result = asyncio.run(download_files(client, targets, ["similarity_pdf", "pdf", "original"], run1))
    assert sorted(client.calls).count(("c1", "original")) == 1  # one check, two documents: fetched once
    assert result.downloaded == 2 and result.reused == 1  # the twin's original comes from the cache
    assert [(f.document_id, f.kind, f.code) for f in result.failures] == [
        ("a", "pdf", "service_unavailable"), ("b/../x", "pdf", "service_unavailable"), ("twin", "pdf", "service_unavailable")]  # fmt: skip
    assert len(result.unavailable) == 3
    assert files_of(run1, "a") == {"original": "files/a.original.txt"}
    assert (run1 / files_of(run1, "b/../x")["original"]).read_bytes() == b"c2:original"

    client2 = FakeClient()
    again = asyncio.run(download_files(client2, targets, ["pdf", "original"], run1))
    assert sorted(client2.calls) == [("c1", "pdf"), ("c2", "pdf")]  # only what was missing
    assert again.downloaded == 2 and again.failures == []

    client3 = FakeClient()  # a new run folder beside the first one: everything from the cache
    rerun = asyncio.run(download_files(client3, targets, ["pdf", "original"], tmp_path / "run2"))
    assert client3.calls == [] and rerun.downloaded == 0 and rerun.reused == 6
    assert not [p for p in (tmp_path / ".files-cache").iterdir() if p.name.startswith(".")]  # no leftovers


def test_cli_refuses_an_unknown_file_kind_in_one_line(tmp_path: Path) -> None:
    manifest = tmp_path / "m.csv"
    manifest.write_text("document_id,text\na,hello\n")
    out = subprocess.run([sys.executable, "-m", "doccheck.cli", "run", str(manifest), "--download", "pdf,scan"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 1 and "unknown file kind 'scan'" in out.stderr and "Traceback" not in out.stderr
