"""A purge forgets everything it promises: after ``doccheck run --download original`` (a real
process, real emulator, real Prefect server) and ``doccheck purge --campaign C --yes``, a planted
sentence, student name and e-mail are found in NO file under the ledger, the reports (run folder,
``latest/`` and the downloads' ``.files-cache``; with ``--out s3://…``, no object of the bucket,
listed and read, nor a file of the local scratch folder the cache sits in) or the Prefect home:
not in the SQLite ``-wal`` file, not in free pages, not in PostgreSQL's dead tuples."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from doccheck.outputs import connect_catalog
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.prefect_server import PrefectServer
from tests.fixtures.s3 import S3Bucket

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server, pytest.mark.slow]


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doccheck.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=240)  # fmt: skip


def _files_holding(roots: list[Path], needles: list[bytes]) -> list[str]:
    hits = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                hits += [f"{path}: {needle!r}" for needle in needles if needle in data]
    return hits


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        (tmp_path / "ledger").mkdir()
        return f"sqlite:///{tmp_path / 'ledger' / 'l.db'}"
    return str(request.getfixturevalue("postgres_database"))


def _ledger_files(url: str, tmp_path: Path) -> Path:
    """The folder holding the ledger's table files (PostgreSQL: the cluster's ``base/``;
    its ``pg_wal`` keeps old records until the server recycles them, see docs/reliability.md).
    A CHECKPOINT first, so that what the server holds in memory is in the files."""
    if not url.startswith("postgresql"):
        return tmp_path / "ledger"
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(text("CHECKPOINT"))
            return Path(conn.execute(text("SHOW data_directory")).scalar_one()) / "base"
    finally:
        engine.dispose()


def test_purge_leaves_no_trace(
    prefect_server: PrefectServer, emulator: EmulatorHandle, ledger_url: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    out = tmp_path / "out"
    needles = _run_and_purge(env, "out", ledger_url, emulator, tmp_path, reports=lambda: _read_tree(out))
    assert not (out / "latest").exists()
    roots = [_ledger_files(ledger_url, tmp_path), out, *prefect_server.storage()]  # new checkpoints
    assert _files_holding(roots, needles) == []


def test_purge_leaves_no_trace_in_a_bucket(
    prefect_server: PrefectServer, emulator: EmulatorHandle, s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    """``--out s3://…`` (the flow run writes to the bucket): the purge's residue search lists the
    bucket and reads every object left, and the local folder where the run folders were built."""
    ledger_url = f"sqlite:///{tmp_path / 'ledger' / 'l.db'}"
    (tmp_path / "ledger").mkdir()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}, **s3_bucket.env,
           "TMPDIR": str(scratch)}  # fmt: skip
    out = f"{s3_bucket.url}/out"

    def bucket() -> dict[str, bytes]:
        s3_bucket.fs.invalidate_cache()
        return {name: s3_bucket.fs.cat_file(name) for name in s3_bucket.fs.find(f"{s3_bucket.name}/out/")}

    needles = _run_and_purge(env, out, ledger_url, emulator, tmp_path, reports=bucket)
    left = bucket()
    assert [name.rsplit("/", 1)[-1] for name in left] == ["catalog.duckdb"], sorted(left)
    hits = [f"{name}: {needle!r}" for name, data in left.items() for needle in needles if needle in data]
    roots = [_ledger_files(ledger_url, tmp_path), scratch, *prefect_server.storage()]
    assert hits + _files_holding(roots, needles) == []


def _read_tree(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


def _run_and_purge(
    env: dict[str, str], out: str, ledger_url: str, emulator: EmulatorHandle, tmp_path: Path,
    reports: Callable[[], dict[str, bytes]],
) -> list[bytes]:  # fmt: skip
    """``doccheck run`` of a planted student into ``out``, then its dry and real purge; the needles."""
    tag = uuid.uuid4().hex[:10]
    sentence = f"The heron {tag} waded through the moonlit estuary."
    name, email = f"Ottoline Quarrymaine{tag}", f"ottoline.{tag}@example.edu"
    manifest = tmp_path / "quarry.csv"
    pd.DataFrame([
        {"document_id": f"q-{tag}", "text": f"{sentence} " + "Rivers carve valleys over many years. " * 20,
         "student_name": name, "email": email},
    ]).to_csv(manifest, index=False)  # fmt: skip
    env = {**env, "DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": emulator.new_account(),
           "DOCCHECK_DATABASE_URL": ledger_url, "COLUMNS": "200"}  # fmt: skip
    run = _cli(["run", str(manifest), "--campaign", f"quarry-{tag}", "--out", out, "--grace-seconds", "0",
                "--poll-interval", "0.1", "--no-progress", "--metadata-columns", "student_name,email",
                "--download", "original"],
               env, tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    needles = [s.encode() for s in (sentence, name, email)]
    assert [n for n, data in reports().items() if needles[1] in data], "the run should have written the name"
    assert _files_holding([_ledger_files(ledger_url, tmp_path)], needles[1:]), "the ledger should hold the name"
    catalog = connect_catalog(out if "://" in out else tmp_path / out)  # written by the run (the flow)
    assert catalog.execute("SELECT campaign, documents FROM runs").fetchall() == [(f"quarry-{tag}", 1)]
    catalog.close()

    dry = _cli(["purge", "--campaign", f"quarry-{tag}"], env, tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "dry run" in dry.stdout and "report folder would remove" in dry.stdout and "latest" in dry.stdout
    assert "downloaded files would remove: 1" in dry.stdout  # the student's original, kept for reruns

    purged = _cli(["purge", "--campaign", f"quarry-{tag}", "--yes"], env, tmp_path)
    assert purged.returncode == 0, purged.stderr
    assert ("write-ahead log truncated" if ledger_url.startswith("sqlite") else "vacuumed") in purged.stdout
    assert "catalog rebuilt" in purged.stdout  # it names no removed folder; the search reads it too
    catalog = connect_catalog(out if "://" in out else tmp_path / out)
    assert catalog.execute("SELECT count(*) FROM documents").fetchall() == [(0,)]
    catalog.close()
    return needles
