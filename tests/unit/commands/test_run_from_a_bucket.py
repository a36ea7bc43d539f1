"""``doccheck run URL``: the manifest's location reaches the run as the URL it is (issue 48: it
was mangled into a path, ``s3:/term-data/...``), resolved once at the entry."""

from __future__ import annotations

import os
from pathlib import Path

from fsspec.implementations.memory import MemoryFileSystem
from typer.testing import CliRunner

from doccheck.cli import app
from tests.fixtures.memory_bucket import Requests


def _invoke(args: list[str], cwd: Path) -> tuple[int, str]:
    blank = {k: None for k in os.environ if k.startswith("DOCCHECK_")}
    result = CliRunner().invoke(
        app, args, env={**blank, "COLUMNS": "200", "DOCCHECK_DATABASE_URL": f"sqlite:///{cwd / 'l.db'}"}
    )
    return result.exit_code, result.stdout + result.stderr


def test_a_dry_run_of_a_bucket_manifest(tmp_path: Path, bucket: tuple[MemoryFileSystem, Requests]) -> None:
    fs, _ = bucket
    fs.pipe({
        "/term-data/course-a/manifest.csv": b"document_id,path\na,docs/a.txt\nb,../x.txt\n",
        "/term-data/course-a/docs/a.txt": b"An essay about rivers and floods in growing cities.",
    })  # fmt: skip
    code, out = _invoke(
        ["run", "memory://term-data/course-a/manifest.csv", "--dry-run", "--out", str(tmp_path)], tmp_path
    )
    assert code == 0, out
    assert "dry run: nothing was sent." in out and "outside the manifest's prefix" in out
    assert "memory:/term-data" not in out


def test_a_manifest_url_that_cannot_be_read_is_one_line(
    tmp_path: Path, bucket: tuple[MemoryFileSystem, Requests]
) -> None:
    code, out = _invoke(["run", "memory://term-data/course-a/none.csv", "--dry-run"], tmp_path)
    assert code == 1 and "cannot read manifest 'memory://term-data/course-a/none.csv': no such file" in out
    code, out = _invoke(["run", "s3://AKIAEXAMPLE:s3cr3tv4lue@term-data/m.csv", "--dry-run"], tmp_path)
    assert code == 1 and "must not carry credentials" in out and "s3cr3tv4lue" not in out
