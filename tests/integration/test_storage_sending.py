"""Documents that exist only in a bucket (the tests' S3: moto behind the fault proxy), sent to the
emulator: an upload streamed from the store, multipart files and a file sent as its text; the
store's faults (503 SlowDown, connections dropped mid-read) ridden out with each document checked
once; a document deleted before it is sent its row's failure; ``doccheck run --no-prefect`` from a
bucket manifest with an upload-mode document, and from an LMS zip and roster in the bucket; no HEAD
per document, and the store's secret nowhere."""

from __future__ import annotations

import asyncio
import io
import uuid
import zipfile
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from doccheck.client import AsyncDocCheckClient
from doccheck.ledger import Ledger
from doccheck.pipeline import (
    SubmitOptions,
    submit_batch,
)
from doccheck.storage import resolve
from tests import generated_documents as gen
from tests.factories import doccheck_in_process, planned, random_essay
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.s3 import S3Bucket

pytestmark = pytest.mark.integration

MiB = 1024 * 1024


def _documents(bucket: S3Bucket, tag: str) -> list[Any]:
    """An upload-mode essay (6 MiB), four multipart essays and an .odt sent as its text, in the bucket only."""
    files: dict[str, bytes] = {"thesis.txt": (random_essay(7, 400) + "\n").encode() * (6 * MiB // 2600)}
    files |= {f"essay{i}.txt": random_essay(i, 300).encode() for i in range(4)}
    files["notes.odt"] = gen.odt_paragraphs([random_essay(9, 200)])
    bucket.fs.pipe({f"{bucket.name}/docs/{name}": data for name, data in files.items()})
    docs = []
    for row, (name, data) in enumerate(files.items(), start=1):
        mode = "upload" if len(data) > 4 * MiB else "text" if name.endswith(".odt") else "multipart"
        path = resolve(f"{bucket.url}/docs/{name}")
        docs.append(planned(name, row=row, mode=mode, path=path, text=None, size_bytes=len(data),
                            idempotency_key=f"dc1-{tag}-{name}"))  # fmt: skip
    return docs


def _send(emulator: EmulatorHandle, key: str, ledger: Ledger, docs: list[Any]) -> Any:
    async def send() -> Any:
        async with AsyncDocCheckClient(emulator.base_url, key) as client:
            return await submit_batch(
                client, ledger, ledger.start_run(campaign="c1"), docs, SubmitOptions(concurrency=4)
            )

    return asyncio.run(send())


def test_documents_in_a_bucket_are_sent_from_it_with_no_head(
    s3_bucket: S3Bucket, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    key, docs = emulator.new_account(), _documents(s3_bucket, uuid.uuid4().hex[:8])
    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        result = _send(emulator, key, ledger, docs)
    assert (result.submitted, result.failed) == (6, 0), result.failures
    assert emulator.account_state(key)["checks"] == 6
    reads = s3_bucket.proxy.gets_of(f"{s3_bucket.name}/docs/")
    assert [r for r in reads if r.method == "HEAD"] == []  # sizes from planning, never asked again
    thesis = [r for r in reads if r.key.endswith("thesis.txt")]
    assert len(thesis) >= 3  # streamed in ranged reads (2 MiB each), never read whole


def test_a_stores_faults_are_ridden_out_each_document_checked_once(
    s3_bucket: S3Bucket, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    key, docs = emulator.new_account(), _documents(s3_bucket, uuid.uuid4().hex[:8])
    s3_bucket.proxy.set_faults(slow_down_share=0.3, drop_share=0.2, methods={"GET"}, prefix=f"{s3_bucket.name}/docs/")
    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        result = _send(emulator, key, ledger, docs)
        again = _send(emulator, key, ledger, docs)
    faulted = {r.fault for r in s3_bucket.proxy.faulted()}
    assert faulted == {"slow_down", "drop"}, s3_bucket.proxy.faulted()
    assert (result.submitted, result.failed, result.retry_later) == (6, 0, 0), result.failures
    assert (again.already_done, again.submitted) == (6, 0)
    assert emulator.account_state(key)["checks"] == 6  # each document checked (and billed) once


def test_a_document_deleted_before_sending_is_its_rows_failure(
    s3_bucket: S3Bucket, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    key, docs = emulator.new_account(), _documents(s3_bucket, uuid.uuid4().hex[:8])
    s3_bucket.fs.rm([f"{s3_bucket.name}/docs/essay2.txt", f"{s3_bucket.name}/docs/thesis.txt"])
    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        result = _send(emulator, key, ledger, docs)
    assert (result.submitted, result.failed) == (4, 2)
    failures = {f.document_id: f for f in result.failures}
    assert {f.code for f in failures.values()} == {"file_not_found"}
    assert f"cannot read file '{s3_bucket.url}/docs/essay2.txt': " in failures["essay2.txt"].message
    assert s3_bucket.secret_access_key not in repr(result)
    assert emulator.account_state(key)["checks"] == 4


COMMON = ["--no-prefect", "--no-progress", "--grace-seconds", "0", "--poll-interval", "0.1"]
ROSTER = (
    "\ufeffIdentifier,Full name,Email address,Status\n"
    "Participant 100,Student 0,s0@example.org,Submitted\n"
    "Participant 107,Katherine Johnson,kj@example.org,No submission\n"
)


def _doccheck_run(source: str, folder: Path, emulator: EmulatorHandle, key: str, *extra: str) -> Any:
    """``doccheck run SOURCE --no-prefect`` as a user types it (in this process: the bucket's
    variables are set by the fixture), its ledger and reports in ``folder``."""
    args = ["run", source, "--database-url", f"sqlite:///{folder / 'l.db'}", "--out", "out", *COMMON, *extra]
    env = {"DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": key}
    return doccheck_in_process(args, env, cwd=folder)


def test_doccheck_run_sends_an_upload_from_a_bucket_manifest_through_the_stores_faults(
    s3_bucket: S3Bucket, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    b, key = s3_bucket, emulator.new_account()
    thesis = (random_essay(7, 400) + "\n").encode() * (6 * MiB // 2600)  # the upload flow
    files = {"docs/thesis.txt": thesis} | {f"docs/essay{i}.txt": random_essay(i, 300).encode() for i in range(4)}
    rows = "".join(f"d{i},{name}\n" for i, name in enumerate(files))
    b.fs.pipe({f"{b.name}/course/{name}": data for name, data in files.items()})
    b.fs.pipe_file(f"{b.name}/course/manifest.csv", ("document_id,path\n" + rows).encode())
    b.proxy.set_faults(slow_down_share=0.3, drop_share=0.2, seed=5, methods={"GET"}, prefix=f"{b.name}/course/docs/")
    done = _doccheck_run(f"{b.url}/course/manifest.csv", tmp_path, emulator, key)
    assert done.returncode == 0, done.stdout + done.stderr
    assert emulator.account_state(key)["checks"] == 5  # each document checked once
    reads = b.proxy.gets_of(f"{b.name}/course/docs/")
    assert {r.fault for r in reads} >= {"slow_down", "drop"}
    assert [r for r in reads if r.method == "HEAD"] == []  # sizes from the listing, then from planning
    assert len([r for r in reads if r.key.endswith("thesis.txt") and r.fault is None]) >= 3  # in ranged reads
    submitted = pq.read_table(tmp_path / "out" / "latest" / "submissions.parquet").to_pylist()
    assert sorted((r["document_id"], r["mode"]) for r in submitted)[:2] == [("d0", "upload"), ("d1", "multipart")]
    assert b.secret_access_key not in done.stdout + done.stderr


def _export(essays: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for i in range(essays):
            zf.writestr(f"Student {i}_{100 + i}_assignsubmission_file/essay{i}.txt", random_essay(40 + i, 150))
        zf.writestr("Student 0_100_assignsubmission_file/tool.exe", b"MZ")
    return buffer.getvalue()


def test_doccheck_run_reads_an_lms_zip_and_its_roster_from_a_bucket(
    s3_bucket: S3Bucket, emulator: EmulatorHandle, tmp_path: Path
) -> None:
    b, key, tag = s3_bucket, emulator.new_account(), uuid.uuid4().hex[:8]
    b.fs.pipe({f"{b.name}/exports/C101-Essay-{tag}.zip": _export(5), f"{b.name}/exports/grades.csv": ROSTER.encode()})
    b.proxy.set_faults(slow_down_share=0.3, seed=2, methods={"GET"}, prefix=f"{b.name}/exports/")
    done = _doccheck_run(f"{b.url}/exports/C101-Essay-{tag}.zip", tmp_path, emulator, key,
                         "--roster", f"{b.url}/exports/grades.csv")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Moodle export: 5 participants, 5 files, 1 rejected" in done.stdout
    assert "no submission: Katherine Johnson (107)" in done.stdout
    assert emulator.account_state(key)["checks"] == 5
    zip_reads = b.proxy.gets_of(f"{b.name}/exports/C101-Essay-{tag}.zip")
    # its HEAD, zipfile's reads of the end record, the zip64 locator before it and the directory,
    # then every member in one ranged read (a small zip); SlowDowns retried by botocore on top
    assert len([r for r in zip_reads if r.fault is None]) <= 5, zip_reads
    documents = pq.read_table(tmp_path / "out" / "latest" / "documents.parquet").to_pylist()
    assert {r["export_name"] for r in documents} == {f"C101-Essay-{tag}.zip"}
    assert {r["email"] for r in documents if r["student_id"] == "100"} == {"s0@example.org"}
