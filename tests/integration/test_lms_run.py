"""An LMS export run end to end against the emulator: a second download sends only what changed."""

from __future__ import annotations

import asyncio
import uuid
import zipfile
from contextlib import closing
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from doccheck.ledger import Ledger
from doccheck.pipeline import (
    OutputOptions,
    RunOptions,
    SourceOptions,
    SubmissionOptions,
    WaitingOptions,
)
from tests.factories import random_essay, run_locally
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration]


def _moodle_zip(path: Path, members: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


FIRST = {f"Student {i}_{100 + i}_assignsubmission_file/essay{i}.txt": random_essay(i, 120) for i in range(5)} | {
    "Student 0_100_assignsubmission_onlinetext/onlinetext.html": f"<p>{random_essay(50, 120)}</p>"
}


def _options(export: Path, out: Path) -> RunOptions:
    return RunOptions(
        source=SourceOptions(manifest=str(export), products=["ai"]),
        submission=SubmissionOptions(batch_size=4, concurrency=4),
        waiting=WaitingOptions(timeout=30, grace_seconds=0, poll_interval=0.2),
        output=OutputOptions(out_dir=str(out)),
    )


def test_a_second_download_sends_only_new_and_changed_work(emulator: EmulatorHandle, tmp_path: Path) -> None:
    key = emulator.new_account()
    tag = uuid.uuid4().hex[:8]
    second = dict(FIRST)
    second["Student 3_103_assignsubmission_file/essay3.txt"] = random_essay(333, 120)  # replaced by the student
    second["Late One_201_assignsubmission_file/late.txt"] = random_essay(201, 120)
    second["Late Two_202_assignsubmission_file/late.txt"] = random_essay(202, 120)
    week1 = _moodle_zip(tmp_path / "week1" / f"C101-Essay-{tag}.zip", FIRST)
    # The next week's download, unzipped by the browser's OS into a folder "... (1)".
    week2 = tmp_path / "week2" / f"C101-Essay-{tag} (1)"
    with zipfile.ZipFile(_moodle_zip(tmp_path / "w2.zip", second)) as zf:
        zf.extractall(week2)
    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        one = asyncio.run(run_locally(ledger, emulator.base_url, key, _options(week1, tmp_path / "out")))
        assert one.status == "finished", one
        assert (one.campaign, one.documents, one.submitted) == (f"C101-Essay-{tag}", 6, 6)
        charged = emulator.account_state(key)["checks"]
        assert charged == 6
        two = asyncio.run(run_locally(ledger, emulator.base_url, key, _options(week2, tmp_path / "out")))
    assert two.status == "finished", two
    assert two.campaign == one.campaign
    assert two.documents == 8
    assert two.submitted == 3 and two.reused == 5
    assert emulator.account_state(key)["checks"] == charged + 3
    # The reports say whose work each document is (never sent: metadata is the allowlist only).
    subs = pq.read_table(Path(str(two.report_dir)) / "submissions.parquet").to_pylist()
    docs = {r["submitted_file"]: r for r in pq.read_table(Path(str(two.report_dir)) / "documents.parquet").to_pylist()}
    essay3 = next(r for r in subs if r["submitted_file"] == "essay3.txt")
    assert (essay3["lms"], essay3["student_id"], essay3["student"], essay3["late"], essay3["attempt"]) == (
        "moodle", "103", "Student 3", None, None,
    )  # fmt: skip
    assert docs["onlinetext.html"]["student"] == "Student 0" and docs["essay3.txt"]["student_id"] == "103"
    assert {r["student"] for r in subs} == {f"Student {i}" for i in range(5)} | {"Late One", "Late Two"}
    # The three new or changed files are marked new (this run made their checks); the rest were reused.
    new = {(r["student"], r["submitted_file"]) for r in subs if r["new_this_run"]}
    assert new == {("Student 3", "essay3.txt"), ("Late One", "late.txt"), ("Late Two", "late.txt")}
    assert all(r["new_this_run"] is False for r in subs if (r["student"], r["submitted_file"]) not in new)
    assert {(r["student"], r["submitted_file"]) for r in docs.values() if r["new_this_run"]} <= new
    first = pq.read_table(Path(str(one.report_dir)) / "submissions.parquet").to_pylist()
    assert all(r["new_this_run"] is True for r in first)
    with emulator.client(key) as http:
        for row in subs:
            check = http.get(f"/checks/{row['check_id']}").json()
            assert check["metadata"]["document_id"] == row["document_id"]
            assert set(check["metadata"]) <= {"document_id", "doccheck_ref"}, check["metadata"]
            assert "Student" not in check["name"]


def _files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_blind_marking_keeps_real_names_out_and_lists_refusals_and_missing_students(
    emulator: EmulatorHandle, tmp_path: Path
) -> None:
    key = emulator.new_account()
    tag = uuid.uuid4().hex[:8]
    export = _moodle_zip(
        tmp_path / f"C102-Blind-{tag}.zip",
        {
            "Participant_7_assignsubmission_file/essay.txt": random_essay(7, 120),
            "Participant_8_assignsubmission_file/essay.txt": random_essay(8, 120),
            "Participant_8_assignsubmission_file/sources.zip": "PK not opened",
            "Participant_7_assignsubmission_file/tool.exe": "MZ",
        },
    )
    roster = tmp_path / "worksheet.csv"
    roster.write_text(
        "Identifier,Full name,Email address\n"
        "Participant 7,Alice Realname,alice@uni.example\n"
        "Participant 8,Bob Realname,bob@uni.example\n"
        "Participant 9,Carol Realname,carol@uni.example\n",
        encoding="utf-8",
    )
    base = _options(export, tmp_path / "out")
    options = base.model_copy(update={"source": base.source.model_copy(update={"roster": str(roster)})})
    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        summary = asyncio.run(run_locally(ledger, emulator.base_url, key, options))
    assert summary.status == "finished" and summary.submitted == 2, summary
    subs = pq.read_table(Path(str(summary.report_dir)) / "submissions.parquet").to_pylist()
    refused = {r["submitted_file"]: r for r in subs if r["status"] == "rejected"}
    assert set(refused) == {"sources.zip", "tool.exe"}
    assert summary.rejected == len(refused)  # the summary counts the refused entries the reports list
    assert (
        refused["sources.zip"]["error_code"] == "nested_zip" and refused["tool.exe"]["error_code"] == "unsupported_type"
    )
    assert "Participant 8 (8)" in refused["sources.zip"]["error_message"]
    assert all(r["cost_cents"] == 0 and r["net_cents"] == 0 and r["check_id"] is None for r in refused.values())
    missing = [r for r in subs if r["status"] == "no_submission"]
    assert [(r["student_id"], r["student"], r["email"], r["cost_cents"]) for r in missing] == [
        ("9", "Participant 9", None, 0)
    ]
    docs = pq.read_table(Path(str(summary.report_dir)) / "documents.parquet").to_pylist()
    assert sorted(r["student"] for r in docs if r["status"] == "submitted") == ["Participant 7", "Participant 8"]
    # what a page grouping by student needs, on every row of the export (documents, refusals, missing)
    assert {(r["lms"], r["export_name"]) for r in docs} == {("moodle", export.name)}
    assert sorted((r["student_id"], r["status"]) for r in docs) == [
        ("7", "rejected"), ("7", "submitted"), ("8", "rejected"), ("8", "submitted"), ("9", "no_submission"),
    ]  # fmt: skip
    for path in _files_under(tmp_path / "out"):
        data = path.read_bytes()
        for secret in (b"Realname", b"uni.example"):
            assert secret not in data, f"{secret!r} in {path}"


def test_a_manifest_run_has_null_lms_columns(emulator: EmulatorHandle, tmp_path: Path) -> None:
    key = emulator.new_account()
    manifest = tmp_path / f"plain-{uuid.uuid4().hex[:8]}.csv"
    manifest.write_text(f"document_id,text,student\nd1,{random_essay(1, 120)},Alice Realname\n", encoding="utf-8")
    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        summary = asyncio.run(run_locally(ledger, emulator.base_url, key, _options(manifest, tmp_path / "out")))
    assert summary.status == "finished", summary
    for table in ("submissions.parquet", "documents.parquet"):
        (row,) = pq.read_table(Path(str(summary.report_dir)) / table).to_pylist()
        assert row["document_id"] == "d1"
        assert all(row[c] is None for c in ("lms", "student_id", "student", "late", "attempt", "submitted_file"))


def test_purging_the_campaign_removes_the_copies_of_the_export(emulator: EmulatorHandle, tmp_path: Path) -> None:
    """The export's documents are copied under ``<out>/exports/<campaign>/``: purging the
    campaign removes them with the reports, so no student's text stays behind."""
    from doccheck.ledger import execute_purge, plan_purge

    key = emulator.new_account()
    essay = random_essay(4242, 120)
    export = _moodle_zip(tmp_path / f"C103-Purge-{uuid.uuid4().hex[:8]}.zip",
                         {"Student 1_101_assignsubmission_file/essay.txt": essay})  # fmt: skip
    with closing(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        summary = asyncio.run(run_locally(ledger, emulator.base_url, key, _options(export, tmp_path / "out")))
        assert summary.status == "finished", summary
        copies = list((tmp_path / "out" / "exports").iterdir())
        assert len(copies) == 1 and any(essay.encode() in p.read_bytes() for p in _files_under(copies[0]))
        plan = plan_purge(ledger.engine, campaigns=[summary.campaign])
        assert plan.export_folders == copies
        execute_purge(ledger.engine, plan)
    assert not copies[0].exists()
    assert not any(essay.encode() in p.read_bytes() for p in _files_under(tmp_path / "out"))
