"""A rerun with nothing new takes its run folder from the campaign's last one (issue 49), and
gets exactly what it would have built from the ledger; any change in the ledger builds again."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from doccheck.ledger import Ledger
from doccheck.outputs import LedgerReportTables, run_label, write_reports
from doccheck.outputs.instructor import write_run_outputs
from tests.factories import doccheck_in_process
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration]

TABLES = ("submissions.parquet", "ai_results.parquet", "similarity_results.parquet", "documents.parquet")
PAGES = ("documents.csv", "calibration.json")


def _manifest(folder: Path) -> Path:
    path = folder / "term.csv"
    lines = ["document_id,course,text"]
    lines += [
        f"d-{i},course-{i % 3},{f'Essay {i} on rivers mills and the towns that grew by them. ' * 3}" for i in range(12)
    ]
    lines.append("d-bad,course-0,")  # a rejected row: in every folder too
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(folder: Path, emulator: EmulatorHandle, key: str, url: str, *extra: str) -> dict[str, str]:
    args = ["run", str(folder / "term.csv"), "--campaign", "term", "--no-wait", "--no-progress", "--no-prefect",
            "--group-by", "course", "--metadata-columns", "course", "--database-url", url, "--out", "out",
            *extra]  # fmt: skip
    done = doccheck_in_process(args, {"DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": key}, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return _newest(folder / "out")


def _newest(out: Path) -> dict[str, str]:
    """The newest run folder's name, run id and inputs (``.inputs.json``)."""
    folder = max((p for p in out.iterdir() if p.name.startswith("term-")), key=lambda p: p.name)
    inputs = json.loads((folder / ".inputs.json").read_text())
    return {"folder": folder.name, "run_id": json.loads((folder / "run.json").read_text())["run_id"], **inputs}


def _rebuilt(url: str, run_id: str, target: Path) -> Path:
    """The run's folder as built from the ledger alone (a fresh ``--out``: nothing to reuse)."""
    ledger = Ledger(url)
    tables = LedgerReportTables.from_ledger(ledger, run_id=run_id)
    paths = write_reports(target, run_label("term", run_id), tables, metadata=ledger.document_metadata(run_id),
                          staged=True)  # fmt: skip
    asyncio.run(write_run_outputs(paths.run_dir, paths.latest_dir, campaign="term", run_id=run_id, ledger=ledger,
                                  status=ledger.get_run(run_id).status, rules={"group_by": "course"}))  # fmt: skip
    return Path(str(paths.run_dir))


def _same_folder(built: Path, reused: Path, run_id: str) -> None:
    """Every table equal, every page and file equal but for the time it was generated."""
    for name in TABLES:
        assert pq.read_table(built / name).equals(pq.read_table(reused / name)), name
    pages = sorted(p.name for p in (built / "groups").iterdir())
    assert (
        pages == sorted(p.name for p in (reused / "groups").iterdir()) and len(pages) == 4
    )  # 'none': the rejected row
    for name in [*PAGES, *(f"groups/{p}" for p in pages)]:
        assert _text(built / name) == _text(reused / name), name
    assert run_id in (reused / "groups" / pages[0]).read_text(encoding="utf-8")


def _text(path: Path) -> str:
    return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated …", path.read_text(encoding="utf-8"))


def _first_and_rerun(folder: Path, emulator: EmulatorHandle, key: str, url: str) -> dict[str, str]:
    """The first run, then a rerun with nothing new: it takes the first run's folder, and that is
    the folder a rebuild from the ledger writes."""
    _manifest(folder)
    first = _run(folder, emulator, key, url)
    assert first["reused"] is None  # nothing before it
    rerun = _run(folder, emulator, key, url)
    assert rerun["reused"] == first["folder"] and rerun["files"] == first["files"]
    reused = folder / "out" / rerun["folder"]
    new_flags = pq.read_table(reused / "submissions.parquet", columns=["new_this_run", "status"]).to_pylist()
    assert {r["new_this_run"] for r in new_flags if r["status"] == "submitted"} == {False}
    _same_folder(_rebuilt(url, rerun["run_id"], folder / "rebuilt"), reused, rerun["run_id"])
    return {**rerun, "first_run_id": first["run_id"]}


def test_a_rerun_with_nothing_new_takes_the_last_folder(emulator: EmulatorHandle, tmp_path: Path) -> None:
    key, url = emulator.new_account(), f"sqlite:///{tmp_path / 'ledger.db'}"
    rerun = _first_and_rerun(tmp_path, emulator, key, url)

    # The results come in (the service's clock, then a collect): the ledger changed, so the next
    # rerun builds its folder again, and shows them.
    emulator.advance(3600)
    collected = doccheck_in_process(
        ["collect", "--campaign", "term", "--database-url", url, "--out", "out", "--no-prefect"],
        {"DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": key}, cwd=tmp_path,
    )  # fmt: skip
    assert collected.returncode == 0, collected.stdout + collected.stderr
    # The first run's reports written again (its checks were submitted while it ran): its own flags.
    first = max(p for p in (tmp_path / "out").iterdir() if rerun["first_run_id"][:8] in p.name)
    assert json.loads((first / ".inputs.json").read_text())["reused"] is None
    flags = pq.read_table(first / "submissions.parquet", columns=["new_this_run"])
    assert set(flags.column("new_this_run").to_pylist()) == {True, None}  # None: the rejected row
    after = _run(tmp_path, emulator, key, url)
    assert after["reports"] != rerun["reports"]
    statuses = pq.read_table(tmp_path / "out" / after["folder"] / "ai_results.parquet", columns=["status"])
    assert set(statuses.column("status").to_pylist()) == {"completed"}
    _same_folder(_rebuilt(url, after["run_id"], tmp_path / "rebuilt-after"), tmp_path / "out" / after["folder"],
                 after["run_id"])  # fmt: skip

    # Other AI rules: the same reports are taken, the wide table and pages are built.
    rules = _run(tmp_path, emulator, key, url, "--ai-band-elevated", "0.2")
    assert rules["reused"] == after["folder"] and rules["reports"] == after["reports"]
    assert rules["files"] != after["files"]


@pytest.mark.postgres
def test_a_rerun_on_postgresql_takes_the_last_folder(
    emulator: EmulatorHandle, postgres_database: str, tmp_path: Path
) -> None:
    _first_and_rerun(tmp_path, emulator, emulator.new_account(), postgres_database)
