"""``--out s3://…`` against the tests' S3 server (moto behind the fault proxy) and the emulator: a run
writes every report object to the bucket and ``doccheck.catalog`` queries them there; a run killed
while publishing leaves no folder that says it is complete, its rerun completes the term without a
second check, and ``doccheck purge`` empties the campaign's objects. No credential reaches the
output or an object."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

import doccheck
from doccheck.errors import CatalogError
from tests.factories import doccheck_in_process
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.s3 import S3Bucket

pytestmark = pytest.mark.integration

DOCS = 6


def _manifest(tmp_path: Path) -> Path:
    manifest = tmp_path / "essays.csv"
    rows = [{"document_id": f"e-{i}", "text": f"Essay {i} about estuaries and their tides. " * 40} for i in range(DOCS)]
    pd.DataFrame(rows).to_csv(manifest, index=False)
    return manifest


def _args(manifest: Path, out: str) -> list[str]:
    return ["run", str(manifest), "--campaign", "hist", "--out", out, "--no-prefect", "--no-wait", "--no-progress"]


def _env(emulator: EmulatorHandle, key: str, tmp_path: Path) -> dict[str, str]:
    return {"DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": key,
            "DOCCHECK_DATABASE_URL": f"sqlite:///{tmp_path / 'ledger.db'}"}  # fmt: skip


def _objects(bucket: S3Bucket, prefix: str = "reports") -> dict[str, bytes]:
    bucket.fs.invalidate_cache()
    root = f"{bucket.name}/{prefix}/"
    return {name[len(root) :]: bucket.fs.cat_file(name) for name in bucket.fs.find(root)}


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory where run folders are built before they are published: the test's own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_run_writes_its_reports_to_the_bucket_and_the_catalog_reads_them_there(
    s3_bucket: S3Bucket, emulator: EmulatorHandle, emulator_account: str, tmp_path: Path, scratch: Path
) -> None:
    out = f"{s3_bucket.url}/reports"
    done = doccheck_in_process(
        _args(_manifest(tmp_path), out), _env(emulator, emulator_account, tmp_path), cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    objects = _objects(s3_bucket)
    [folder] = {name.split("/")[0] for name in objects if name.startswith("hist-")}
    for name in ("run.json", "report.html", "documents.parquet", "documents.csv", "submissions.parquet"):
        assert f"{folder}/{name}" in objects
    assert {"latest/run.json", "latest/report.html", "catalog.duckdb"} <= set(objects)
    assert any(name.startswith("tables/documents/campaign=hist/run=") for name in objects)
    assert f"{out}/{folder}" in done.stdout  # the summary names the bucket's folder, not a local path
    assert not list(scratch.rglob("*.partial"))  # the local copy went once published

    con = doccheck.catalog(out)  # the bucket's catalog, its views reading the bucket
    assert con.execute("SELECT count(*), count(DISTINCT document_id) FROM documents").fetchall() == [(DOCS, DOCS)]
    assert con.execute("SELECT campaign, report_folder FROM runs").fetchall() == [("hist", folder)]
    # docs/storage.md's pandas line: the hive-style tree straight from the bucket (s3fs underneath)
    frame = pd.read_parquet(f"{out}/tables/submissions")
    assert len(frame) == DOCS and set(frame["campaign"].astype(str)) == {"hist"} and frame["run"].nunique() == 1
    secret = s3_bucket.secret_access_key.encode()
    assert secret.decode() not in done.stdout + done.stderr
    assert not [name for name, data in objects.items() if secret in data]


def test_a_run_killed_while_publishing_shows_nothing_its_rerun_completes_and_purge_empties_the_prefix(
    s3_bucket: S3Bucket, emulator: EmulatorHandle, emulator_account: str, tmp_path: Path, scratch: Path
) -> None:
    out = f"{s3_bucket.url}/reports"
    manifest = _manifest(tmp_path)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}, "TMPDIR": str(scratch),
           **_env(emulator, emulator_account, tmp_path), **s3_bucket.env}  # fmt: skip
    # Every store request takes 400 ms: the run publishes its folder object by object, and is
    # killed once the bucket has its first one (the run touches the bucket only to publish).
    s3_bucket.proxy.set_faults(latency_ms=400)
    proc = subprocess.Popen([sys.executable, "-m", "doccheck.cli", *_args(manifest, out)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while not s3_bucket.proxy.puts_of(f"{s3_bucket.name}/reports/"):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    s3_bucket.proxy.reset()
    half = _objects(s3_bucket)
    assert half and not [name for name in half if name.endswith("run.json") or name == "catalog.duckdb"], sorted(half)
    assert list(scratch.rglob(".hist-*.partial"))  # what it was publishing, on the local disk
    with pytest.raises(CatalogError):
        doccheck.catalog(out)
    checks = emulator.account_state(emulator_account)["checks"]
    assert checks == DOCS

    rerun = doccheck_in_process(_args(manifest, out), _env(emulator, emulator_account, tmp_path), cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert emulator.account_state(emulator_account)["checks"] == DOCS  # no document checked twice
    con = doccheck.catalog(out)
    [(folder, documents)] = con.execute("SELECT report_folder, documents FROM runs").fetchall()
    killed = {name.split("/")[0] for name in half}
    assert documents == DOCS and folder not in killed  # the rerun's own folder; the killed one stays uncounted
    assert not [name for name in _objects(s3_bucket) if name.split("/")[0] in killed and name.endswith("run.json")]

    purge = doccheck_in_process(["purge", "--campaign", "hist", "--yes"], _env(emulator, emulator_account, tmp_path),
                                cwd=tmp_path)  # fmt: skip
    assert purge.returncode == 0, purge.stdout + purge.stderr
    left = _objects(s3_bucket)
    assert set(left) == {"catalog.duckdb"}, sorted(left)  # every folder, latest/ and tables/ of the campaign
    assert doccheck.catalog(out).execute("SELECT count(*) FROM runs").fetchall() == [(0,)]
    assert not list(scratch.rglob("*.partial"))  # what the killed run left on the local disk went too
