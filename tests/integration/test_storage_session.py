"""docs/storage.md's first session, run as written (issue 48: "a newcomer's session").

The page marks its runnable blocks with an HTML comment the rendered page does not show:

- ``<!-- session: environment -->`` before the ``bash`` block of what a user exports: not run
  (its values are placeholders); every variable it names must be one this test sets, and this
  test sets nothing else but the shell's own (``PATH`` with the venv first, ``HOME``, ``TMPDIR``).
- ``<!-- session -->`` before a ``bash`` block (run by ``bash`` with ``-e``: every command must
  exit 0) or a ``python`` block (run by the venv's ``python -``, as pasted into a shell), in the
  page's order, from a folder holding a copy of ``sample_data/``.
- ``<!-- output -->`` before a ``text`` block after one: each line is a pattern (``…`` stands
  for anything) that some line of that block's output must match.

Against the tests' S3 server (moto behind the fault proxy, no fault set) with the page's
buckets created first, and the session's emulator with a fresh account. Then the bucket is
checked as the page says: the rerun checked nothing again and read no document, the purge left
only the rebuilt catalog, and the store's secret is in no output.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.s3 import S3Bucket

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "storage.md"
MARK = re.compile(r"^<!-- session(?P<env>: environment)? -->\n```(?P<lang>\w+)\n(?P<body>.*?)^```\n", re.M | re.S)
OUTPUT = re.compile(r"\A\s*<!-- output -->\n```text\n(?P<body>.*?)^```\n", re.M | re.S)
BUCKETS = ("term-data", "term-reports")


@dataclass
class Block:
    """One marked block of the page: its language, its text, what its output must name."""

    lang: str
    body: str
    expected: list[str]
    environment: bool


def session_blocks(page: str) -> list[Block]:
    """The page's marked blocks, in order, each with its ``<!-- output -->`` patterns."""
    blocks = []
    for match in MARK.finditer(page):
        output = OUTPUT.match(page, match.end())
        expected = [line for line in output["body"].splitlines() if line.strip()] if output else []
        blocks.append(Block(match["lang"], match["body"], expected, bool(match["env"])))
    return blocks


def exported(body: str) -> set[str]:
    """The names an ``export`` line of ``body`` sets."""
    names = set()
    for line in body.splitlines():
        if line.startswith("export "):
            names |= set(re.findall(r"\b([A-Z][A-Z0-9_]*)=", line.split("#", 1)[0]))
    return names


def _pattern(line: str) -> re.Pattern[str]:
    """``line`` of an output block as a pattern: ``…`` matches anything, a run of spaces any run."""
    return re.compile(".*?".join(re.escape(_squeezed(part).strip()) for part in line.split("…")))


def _squeezed(text: str) -> str:
    """``text`` with every run of whitespace one space (a table's columns are as wide as the terminal)."""
    return " ".join(text.split())


def _environment(bucket: S3Bucket, emulator: EmulatorHandle, key: str, home: Path) -> dict[str, str]:
    """What a user's shell has: its own variables, and those the page's environment block exports."""
    venv_bin = Path(sys.executable).parent
    shell = {"PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home / "tmp"),
             "LANG": "C.UTF-8", "COLUMNS": "120", "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    user = {**bucket.env, "DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": key}
    return {**shell, **user}


def _run(block: Block, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    if block.lang == "bash":
        script = "set -eo pipefail\ntrap 'echo \"failed: $BASH_COMMAND\" >&2' ERR\n" + block.body
        args = ["bash", "-c", script]
        stdin = None
    else:
        args, stdin = ["python", "-"], block.body
    return subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.mark.slow  # 52-75 s in CI: started first, not left last while the other workers idle
def test_the_pages_session_runs_as_written(
    s3_bucket: S3Bucket, emulator: EmulatorHandle, emulator_account: str, tmp_path: Path
) -> None:
    blocks = session_blocks(PAGE.read_text(encoding="utf-8"))
    [environment] = [b for b in blocks if b.environment]
    runnable = [b for b in blocks if not b.environment]
    assert len(runnable) >= 6 and {b.lang for b in runnable} == {"bash", "python"}
    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    env = _environment(s3_bucket, emulator, emulator_account, home)
    # The page's exports are the variables a user sets; the test sets those only (the region and
    # the disabled instance metadata are the fixture's: no request may leave loopback).
    assert exported(environment.body) <= set(env), exported(environment.body) - set(env)
    for bucket in BUCKETS:  # a user's buckets exist
        s3_bucket.fs.mkdir(bucket)
    work = tmp_path / "term"
    shutil.copytree(ROOT / "sample_data", work / "sample_data")

    checks: list[int] = []  # the account's checks after each block
    reads: list[list[str]] = []  # each block's GETs and HEADs of the term's documents
    lists: list[int] = []  # and its LISTs of the term's bucket
    for block in runnable:
        s3_bucket.proxy.clear_log()
        done = _run(block, env, work)
        text = done.stdout + done.stderr
        assert done.returncode == 0, f"{block.body}\n---\n{text}"
        lines = [_squeezed(line) for line in text.splitlines()]
        for expected in block.expected:
            assert any(_pattern(expected).search(line) for line in lines), f"{expected!r} not in:\n{text}"
        assert s3_bucket.secret_access_key not in text
        checks.append(emulator.account_state(emulator_account)["checks"])
        reads.append([r.method + " " + r.path for r in s3_bucket.proxy.gets_of("term-data/envs101/submissions/")])
        lists.append(len(s3_bucket.proxy.lists("term-data")))

    upload, run, rerun = runnable[:3]
    assert "put(" in upload.body and rerun.body.strip() in run.body  # the page's order: upload, run, rerun
    assert checks[1] == checks[-1] == 13  # the rerun, the queries and the purge checked nothing again
    # The rerun decided from one listing and read no document, as the page says: not the image the
    # first run refused after reading it, nor the near-duplicate pair for the report page's passages.
    assert lists[2] == 1
    assert reads[1] and reads[2] == []
    s3_bucket.fs.invalidate_cache()
    assert s3_bucket.fs.find("term-reports") == ["term-reports/2026-autumn/catalog.duckdb"]
    assert len(s3_bucket.fs.find("term-data/envs101/")) == len(
        [p for p in (work / "sample_data").rglob("*") if p.is_file()]
    )
