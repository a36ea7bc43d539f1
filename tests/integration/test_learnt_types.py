"""Issue 41: a refused type is learnt for every later process, and the report says a file was
misnamed. Two real ``doccheck run`` processes (no Prefect server: the library's steps) against the
emulator's ``no-odt`` profile and one SQLite ledger: the first pays the free 415 and keeps what it
learnt, the second sends its .odt files as their text without a single refusal, each document is
charged once; ``doccheck probe`` shows what was learnt. About 10 s (two processes' start-up: most of it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from doccheck.cli import app
from doccheck.domain import estimate_cost_cents
from doccheck.extract import count_words, extract_text
from doccheck.ledger import Ledger
from tests import generated_documents as gen
from tests.factories import essay
from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration


def _doccheck(args: list[str], *, cwd: Path, key: str, emu: EmulatorHandle) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCCHECK_", "PREFECT_"))}
    env.update(DOCCHECK_BASE_URL=emu.base_url, DOCCHECK_API_KEY=key, PREFECT_HOME=str(cwd / "prefect-home"),
               DOCCHECK_DATABASE_URL=f"sqlite:///{cwd / 'ledger.db'}", COLUMNS="250")  # fmt: skip
    return subprocess.run([sys.executable, "-m", "doccheck.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)  # fmt: skip


def _refusals(emu: EmulatorHandle, key: str) -> int:
    with emu.client() as http:
        return int(http.get(f"{emu.root_url}/_emulator/profile").json()["refused"].get(key, 0))


def _write(folder: Path, rows: list[tuple[str, str, bytes]]) -> Path:
    for _, name, data in rows:
        (folder / name).write_bytes(data)
    manifest = folder / "course.csv"
    manifest.write_text("document_id,path\n" + "".join(f"{d},{n}\n" for d, n, _ in rows), encoding="utf-8")
    return manifest


def test_a_second_process_pays_no_refusal_and_the_report_says_what_was_misnamed(
    isolated_emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emu = isolated_emulator
    key = emu.new_account()
    emu.set_profile("no-odt", api_key=key)
    rows = [("o1", "e1.odt", gen.odt_paragraphs([essay(31)])), ("o2", "e2.odt", gen.odt_paragraphs([essay(32)])),
            ("m", "essay.docx", gen.odt_paragraphs([essay(33)])),  # an OpenDocument file named .docx
            ("t", "notes.txt", essay(34).encode())]  # fmt: skip
    run = ["run", "course.csv", "--campaign", "course", "--products", "ai", "--no-wait", "--no-progress",
           "--out", "out"]  # fmt: skip

    first = _doccheck(run, cwd=_write(tmp_path, rows).parent, key=key, emu=emu)
    assert first.returncode == 0, first.stdout + first.stderr
    paid = _refusals(emu, key)
    assert paid >= 1  # the first .odt taught the type (a second in flight at once may be refused too)
    firsts = {r["document_id"]: r for r in pq.read_table(tmp_path / "out" / "latest" / "documents.parquet").to_pylist()}
    assert {firsts[d]["sent_as"] for d in ("o1", "o2")} == {"text"}  # the overlapped run moved them to their text

    rows.append(("o3", "e3.odt", gen.odt_paragraphs([essay(35)])))  # a new .odt for the next process
    second = _doccheck(run, cwd=_write(tmp_path, rows).parent, key=key, emu=emu)
    assert second.returncode == 0, second.stdout + second.stderr
    assert _refusals(emu, key) == paid  # not one 415: the ledger taught the second process
    assert "files sent as their text" in second.stdout  # planned as text: the summary counts them

    words = [count_words(extract_text(data, name)) for _, name, data in rows]
    state = emu.account_state(key)
    assert state["checks"] == len(rows)  # one check per document, whichever process made it
    assert state["charged_cents"] == sum(estimate_cost_cents(w, ["ai"]) for w in words)

    docs = {r["document_id"]: r for r in pq.read_table(tmp_path / "out" / "latest" / "documents.parquet").to_pylist()}
    assert {d: docs[d]["sent_as"] for d in docs} == {"o1": "text", "o2": "text", "o3": "text", "m": "original",
                                                     "t": "original"}  # fmt: skip
    assert (docs["m"]["read_as"], docs["m"]["named_as"], docs["m"]["misnamed"]) == ("odt", "docx", True)
    assert docs["m"]["status_text"].endswith("; read as OpenDocument text: the file is named .docx")
    assert docs["o1"]["misnamed"] is False and docs["t"]["read_as"] == "txt"
    assert "files misnamed" in second.stdout

    # ``doccheck probe`` (in this process: its free calls over real sockets) says what was learnt
    for name in [k for k in os.environ if k.startswith("DOCCHECK_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    monkeypatch.setenv("DOCCHECK_DATABASE_URL", f"sqlite:///{tmp_path / 'ledger.db'}")
    monkeypatch.setenv("COLUMNS", "250")
    probe = CliRunner().invoke(app, ["probe", "--base-url", emu.base_url, "--out", str(tmp_path / "profile.json")])
    assert probe.exit_code == 0, probe.output
    said = " ".join(probe.output.split())
    assert "learned: service refuses .odt (since " in said
    assert "from the default (the emulator's list" in said and "publishes no list of accepted types" in said


@pytest.mark.postgres
def test_reads_and_refusals_on_postgresql(postgres_ledger: Ledger, tmp_path: Path) -> None:
    """The same two tables on PostgreSQL: a misnamed file recorded once by a run and its rerun,
    counted and reported; a refusal kept once per service and type."""
    from doccheck.ledger import count_misnamed, refused_types, remember_refused_type
    from doccheck.pipeline import record_plan

    ledger = postgres_ledger
    manifest = _write(tmp_path, [("m", "essay.docx", gen.odt_paragraphs([essay(41)])), ("t", "n.txt", b"a few words")])
    first = record_plan(ledger, manifest, campaign="pg", batch_size=1)
    rerun = record_plan(ledger, manifest, campaign="pg", batch_size=1)
    with ledger.engine.connect() as conn:
        assert count_misnamed(conn, first.run_id) == count_misnamed(conn, rerun.run_id) == 1
    rows = {r["document_id"]: r for r in ledger.report_rows(run_id=rerun.run_id)["submissions"]}
    assert (rows["m"]["read_as"], rows["m"]["misnamed"], rows["t"]["misnamed"]) == ("odt", True, False)
    with ledger.engine.begin() as conn:
        assert remember_refused_type(conn, "http://svc.example/api/v1", ".odt", "p")
        assert not remember_refused_type(conn, "http://svc.example/api/v1/", ".odt", "p")
    with ledger.engine.connect() as conn:
        assert list(refused_types(conn, "http://svc.example/api/v1")) == [".odt"]
