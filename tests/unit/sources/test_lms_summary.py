"""An LMS export's refused entries in the run's summary: counted in ``rejected`` and listed, as in the reports."""

from __future__ import annotations

import zipfile
from pathlib import Path

from doccheck.pipeline import dry_run
from doccheck.pipeline._summary import EXPORT_ENTRY, RunSummary, export_rejections, with_export_rejections
from doccheck.sources.lms._derive import derive_manifest

MEMBERS = {
    "Ada Lovelace_101_assignsubmission_file/essay.txt": b"An essay about rivers and floods in growing cities.",
    "Ada Lovelace_101_assignsubmission_file/tool.exe": b"MZ",
    "Alan Turing_102_assignsubmission_file/essay.txt": b"A short answer on congestion pricing and its effects.",
    "Alan Turing_102_assignsubmission_file/sources.zip": b"PK",
    "../escape.txt": b"x",
}


def _derived(tmp_path: Path) -> Path:
    export = tmp_path / "C101-Essay 1-42.zip"
    with zipfile.ZipFile(export, "w") as zf:
        for name, data in MEMBERS.items():
            zf.writestr(name, data)
    return derive_manifest(export, tmp_path / "work").manifest


def test_the_dry_run_counts_and_lists_the_refused_entries(tmp_path: Path) -> None:
    manifest = _derived(tmp_path)
    summary = dry_run(manifest, match=False)
    assert (summary.documents, summary.rejected, summary.counts_by_mode["rejected"]) == (2, 3, 3)
    assert [(r["field"], r["code"], r["row"]) for r in summary.rejections] == [
        (EXPORT_ENTRY, "unsafe_entry", None),
        (EXPORT_ENTRY, "unsupported_type", None),
        (EXPORT_ENTRY, "nested_zip", None),
    ]
    reasons = [str(r["reason"]) for r in summary.rejections]
    assert "Ada Lovelace (101): file type of 'tool.exe' is not supported" in reasons[1]
    assert reasons[2].startswith("Alan Turing_102_assignsubmission_file/sources.zip: Alan Turing (102): a zip")


def test_adding_them_is_idempotent_and_a_plain_manifest_is_unchanged(tmp_path: Path) -> None:
    manifest = _derived(tmp_path)
    once = with_export_rejections(RunSummary(status="finished", campaign="c", manifest=str(manifest), rejected=1))
    assert once.rejected == 4 and len(once.rejections) == 3
    assert with_export_rejections(once) == once  # a summary read back from the ledger is not counted twice
    plain = tmp_path / "m.csv"
    plain.write_text("document_id,text\na,hello\n", encoding="utf-8")
    summary = RunSummary(status="finished", campaign="c", manifest=str(plain))
    assert with_export_rejections(summary) is summary and export_rejections(str(plain)) == []
    assert export_rejections(None) == []
