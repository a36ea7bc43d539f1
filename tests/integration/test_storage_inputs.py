"""``doccheck run s3://...`` against a real S3 API server (moto behind the fault proxy, issue 48):
the manifest and its text, DOCX and PDF documents exist only in the bucket.

- Rows that leave the manifest's prefix (``..``, another bucket, an ``http://`` URL pointed at a
  socket of this test's) are refused with their reason, and nothing is fetched for them: the
  socket sees no connection, the proxy no request for them.
- A rerun with nothing changed makes no new check and no GET or HEAD of a document: the proxy's
  log holds one LIST of the prefix and the manifest's own requests. That holds for a photo refused
  for its bytes (refused again from the listing, same code and reason) and for a near-duplicate
  pair, whose passages the report page shows from the ledger instead of reading both again.
- Under ``503 SlowDown`` and dropped connections on a fixed share of the requests, every document
  is checked once and every row is reported (the store library's own retries).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.factories import random_essay
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.s3 import S3Bucket
from tests.generated_documents import pdf_text, png
from tests.hostile_documents import docx_package, para

pytestmark = [pytest.mark.integration]

COMMON = ["--no-prefect", "--no-progress", "--grace-seconds", "0", "--poll-interval", "0.1"]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A socket of the test's own that an ``http://`` row points at: it must see no connection."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def _connections(sock: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def _documents(count: int) -> dict[str, bytes]:
    """``count`` documents, a third each text, DOCX and PDF, that share no phrase: no cohort pair."""
    files: dict[str, bytes] = {}
    for i in range(count):
        text = random_essay(i)
        if i % 3 == 0:
            files[f"docs/s{i:02}.txt"] = text.encode()
        elif i % 3 == 1:
            files[f"docs/s{i:02}.docx"] = docx_package(para(text))
        else:
            files[f"docs/s{i:02}.pdf"] = pdf_text([text])
    return files


def _term(
    b: S3Bucket, count: int, refused: list[str], extra: dict[str, bytes] | None = None
) -> tuple[str, dict[str, bytes]]:
    """The term in the bucket: ``course-a/manifest.csv``, its documents (and ``extra`` ones), a text
    row and ``refused`` rows."""
    files = {**_documents(count), **(extra or {})}
    rows = [f"s{i:02},{name}," for i, name in enumerate(files)]
    rows.append(f"t00,,{random_essay(99)}")
    rows += [f"x{i},{raw}," for i, raw in enumerate(refused)]
    b.fs.pipe({f"{b.name}/course-a/{name}": data for name, data in files.items()})
    b.fs.pipe({f"{b.name}/course-a/manifest.csv": ("document_id,path,text\n" + "\n".join(rows) + "\n").encode()})
    return f"s3://{b.name}/course-a/manifest.csv", files


def _run(
    manifest: str, folder: Path, b: S3Bucket, emulator: EmulatorHandle, key: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHECK_", "PREFECT_", "AWS_"))}
    env.update(b.env, DOCCHECK_BASE_URL=emulator.base_url, DOCCHECK_API_KEY=key, COLUMNS="200",
               PREFECT_HOME=str(folder / "prefect-home"))  # fmt: skip
    args = ["run", manifest, "--database-url", f"sqlite:///{folder / 'l.db'}", "--out", str(folder / "out"), *COMMON]
    return subprocess.run(
        [sys.executable, "-m", "doccheck.cli", *args], capture_output=True, text=True, env=env, cwd=folder, timeout=600
    )


def _rows(folder: Path) -> list[dict[str, object]]:
    return pq.read_table(folder / "out" / "latest" / "submissions.parquet").to_pylist()


def test_a_run_from_a_bucket_and_its_rerun(
    emulator: EmulatorHandle, s3_bucket: S3Bucket, listener: socket.socket, tmp_path: Path
) -> None:
    b = s3_bucket
    other = f"{b.name}-other"
    b.fs.mkdir(other)
    b.fs.pipe({f"{b.name}/outside/x.txt": b"words outside the prefix", f"{other}/x.txt": b"another bucket's words"})
    port = listener.getsockname()[1]
    refused = ["../outside/x.txt", f"s3://{other}/x.txt", f"http://127.0.0.1:{port}/x.txt"]
    copied = random_essay(50, 300)  # a near-duplicate pair, its passages on the report page
    extra = {"docs/photo.png": png(), "docs/pair-a.txt": copied.encode(),
             "docs/pair-b.txt": (copied + " " + random_essay(51, 20)).encode()}  # fmt: skip
    manifest, files = _term(b, 6, refused, extra)
    key = emulator.new_account()

    first = _run(manifest, tmp_path, b, emulator, key)
    assert first.returncode == 0, first.stdout + first.stderr
    rows = _rows(tmp_path)
    assert len(rows) == len(files) + 1 + len(refused)  # every row reported
    photo = f"s{list(files).index('docs/photo.png'):02}"
    checked = {r["document_id"] for r in rows if r["status"] != "rejected"}
    assert checked == {f"s{i:02}" for i in range(len(files))} - {photo} | {"t00"}
    rejected = {r["document_id"]: r for r in rows if r["status"] == "rejected"}
    assert set(rejected) == {"x0", "x1", "x2", photo}
    assert {r["error_code"] for k, r in rejected.items() if k != photo} == {"path_escapes_manifest_dir"}
    assert rejected[photo]["error_code"] == "image_without_text"
    for i, raw in enumerate(refused):  # each with its reason, naming the row's path
        assert raw in str(rejected[f"x{i}"]["error_message"])
    assert emulator.account_state(key)["checks"] == len(files)  # the photo is not sent
    assert _connections(listener) == 0
    assert b.proxy.gets_of(f"{b.name}/outside/") == [] and b.proxy.gets_of(f"{other}/") == []
    reads = b.proxy.gets_of(f"{b.name}/course-a/docs/")
    assert {r.key for r in reads if r.method == "GET"} == {f"course-a/{name}" for name in files}
    # Each document read once: planned and sent from the same GET (the run's spool); the pair's
    # sides once more, for the passages of the report page.
    gets = Counter(r.key for r in reads if r.method == "GET")
    assert gets == {f"course-a/{name}": 2 if "pair" in name else 1 for name in files}
    page = (tmp_path / "out" / "latest" / "report.html").read_text(encoding="utf-8")
    assert page.count('<article class="evidence"') == 1 and "<mark>" in page  # the pair's passages

    b.proxy.clear_log()
    rerun = _run(manifest, tmp_path, b, emulator, key)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert emulator.account_state(key)["checks"] == len(files)  # no new check
    assert b.proxy.gets_of(f"{b.name}/course-a/docs/") == []  # no GET, no HEAD of a document
    assert len(b.proxy.lists(b.name)) == 1  # the one LIST of the prefix
    again = _rows(tmp_path)
    assert len(again) == len(rows)
    said = {r["document_id"]: (r["error_code"], r["error_message"]) for r in again if r["status"] == "rejected"}
    assert said[photo] == (rejected[photo]["error_code"], rejected[photo]["error_message"])  # refused unread
    assert (tmp_path / "out" / "latest" / "report.html").read_text(encoding="utf-8").count("<mark>") == page.count(
        "<mark>"
    )  # the same passages, from the ledger


def test_a_run_under_throttling_and_dropped_connections(
    emulator: EmulatorHandle, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    b = s3_bucket
    manifest, files = _term(b, 12, ["../outside/x.txt"])
    key = emulator.new_account()
    b.proxy.set_faults(slow_down_share=0.2, drop_share=0.1, seed=3, prefix=f"{b.name}/course-a/")
    done = _run(manifest, tmp_path, b, emulator, key)
    assert done.returncode == 0, done.stdout + done.stderr
    kinds = [r.fault for r in b.proxy.requests]
    assert kinds.count("slow_down") > 0 and kinds.count("drop") > 0
    assert [r for r in b.proxy.faulted() if r.path.startswith(f"{b.name}/course-a/docs/")]  # documents' reads too
    rows = _rows(tmp_path)
    assert len(rows) == len(files) + 2  # every row reported
    assert [r["error_code"] for r in rows if r["status"] == "rejected"] == ["path_escapes_manifest_dir"]
    assert emulator.account_state(key)["checks"] == len(files) + 1  # each document checked once
