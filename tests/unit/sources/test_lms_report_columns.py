"""What the reports get of an export: the sidecar beside the derived manifest, joined by document id."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from doccheck.outputs import NO_SUBMISSION, NOT_A_DOCUMENT, SUPERSEDED, lms_rows
from doccheck.outputs.instructor import write_instructor_files
from doccheck.sources.lms._derive import derive_manifest
from doccheck.sources.lms._sidecar import read_sidecar, sidecar_path
from doccheck.sources.manifest import read_manifest

CANVAS = {
    "lovelaceada_1001_555_essay.txt": b"An essay about rivers and floods.",
    "turingalan_LATE_1002_556_essay.txt": b"Another essay on machines.",
    "turingalan_LATE_1002_557_sources.zip": b"PK",
}
GRADEBOOK = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Essay (55)\n"
    "    Points Possible,,,,,10\n"
    '"Lovelace, Ada",1001,S1,ada,Section A,\n'
    '"Turing, Alan",1002,S2,alan,Section B,\n'
    '"Hopper, Grace",1003,S3,grace,Section A,\n'
)


def _canvas(tmp_path: Path) -> tuple[Path, Path]:
    export = tmp_path / "submissions.zip"
    with zipfile.ZipFile(export, "w") as zf:
        for name, data in CANVAS.items():
            zf.writestr(name, data)
    roster = tmp_path / "gradebook.csv"
    roster.write_text(GRADEBOOK, encoding="utf-8")
    return export, roster


def test_the_sidecar_holds_students_refusals_and_the_roster_and_is_never_metadata(tmp_path: Path) -> None:
    export, roster = _canvas(tmp_path)
    derived = derive_manifest(export, tmp_path / "work", roster=roster)
    sidecar = read_sidecar(derived.manifest)
    assert sidecar is not None and sidecar_path(derived.manifest).is_file()
    by_student = {v["student_id"]: v for v in sidecar["documents"].values()}
    assert by_student["1001"] == {
        "lms": "canvas", "student_id": "1001", "student": "lovelaceada", "late": False, "attempt": None,
        "submitted_file": "essay.txt", "email": None, "section": "Section A",
    }  # fmt: skip
    assert by_student["1002"]["late"] is True and by_student["1002"]["section"] == "Section B"
    (refused,) = sidecar["rejected"]
    assert (refused["code"], refused["student_id"], refused["submitted_file"]) == ("nested_zip", "1002", "sources.zip")
    assert "turingalan (1002): a zip inside the export is not opened" in refused["reason"]
    assert [(r["student_id"], r["student"], r["section"]) for r in sidecar["no_submission"]] == [
        ("1003", "Hopper, Grace", "Section A")
    ]
    # The run reads the manifest; what it would send as metadata is the document id only.
    docs = read_manifest(derived.manifest).documents
    assert docs and all(set(d.metadata) == {"document_id"} for d in docs)


def test_a_blind_export_joins_no_roster_name_nor_email(tmp_path: Path) -> None:
    export = tmp_path / "C1-A-1.zip"
    with zipfile.ZipFile(export, "w") as zf:
        zf.writestr("Participant_7_assignsubmission_file/essay.txt", b"An essay about rivers.")
    roster = tmp_path / "worksheet.csv"
    roster.write_text(
        "Identifier,Full name,Email address\nParticipant 7,Alice Real,a@x.org\nParticipant 9,Carol Real,c@x.org\n",
        encoding="utf-8",
    )
    derived = derive_manifest(export, tmp_path / "work", roster=roster)
    text = sidecar_path(derived.manifest).read_text(encoding="utf-8")
    assert "Real" not in text and "x.org" not in text
    sidecar = read_sidecar(derived.manifest)
    assert sidecar is not None
    assert [r["student"] for r in sidecar["no_submission"]] == ["Participant 9"]


def _sidecar() -> dict[str, Any]:
    return {
        "lms": "canvas",
        "export_name": "C1-essay_submissions.zip",
        "documents": {"d1": {"lms": "canvas", "student_id": "1", "student": "s1", "late": True, "section": "A"}},
        "rejected": [
            {"lms": "canvas", "student_id": "2", "document_id": "d2", "code": "nested_zip", "reason": "x: why"}
        ],
        "no_submission": [{"lms": "canvas", "student_id": "3", "student": "s3", "section": "B"}],
    }


def test_lms_rows_join_by_document_id_then_add_refused_and_missing_rows() -> None:
    chunks = [{"submissions": [{"document_id": "d1", "status": "submitted"}, {"document_id": "m", "status": "unsent"}]}]
    parts = list(lms_rows(chunks, _sidecar()))
    first, extra = parts[0]["submissions"], parts[1]["submissions"]
    assert (first[0]["student"], first[0]["late"], first[0]["section"]) == ("s1", True, "A")
    assert "student" not in first[1]  # a document the export does not know: null columns
    assert [(r["status"], r["error_code"] if r["status"] == "rejected" else None, r["cost_cents"]) for r in extra] == [
        ("rejected", "nested_zip", 0),
        (NO_SUBMISSION, None, 0),
    ]
    assert list(lms_rows(chunks, None)) == chunks


def test_documents_csv_carries_the_lms_and_roster_columns(tmp_path: Path) -> None:
    subs = [r for part in lms_rows([{"submissions": [{"document_id": "d1", "status": "submitted"}]}], _sidecar())
            for r in part["submissions"]]  # fmt: skip
    paths = write_instructor_files(tmp_path, campaign="c", tables={"submissions": subs})
    rows = pq.read_table(paths.documents_parquet).to_pylist()
    assert [(r["status"], r["student"], r["late"], r["section"], r["export_name"]) for r in rows] == [
        ("submitted", "s1", True, "A", "C1-essay_submissions.zip"),
        ("rejected", None, None, None, "C1-essay_submissions.zip"),
        (NO_SUBMISSION, "s3", None, "B", "C1-essay_submissions.zip"),
    ]
    header, first = paths.documents_csv.read_text(encoding="utf-8-sig").splitlines()[:2]
    columns = header.split(",")
    assert {
        "lms",
        "student_id",
        "student",
        "late",
        "attempt",
        "email",
        "section",
        "export_name",
        "new_this_run",
    } <= set(columns)
    assert first.split(",")[columns.index("section")] == "A"


def test_links_receipts_and_older_attempts_are_listed_never_sent(tmp_path: Path) -> None:
    canvas = tmp_path / "C1-essay_submissions.zip"
    with zipfile.ZipFile(canvas, "w") as zf:
        zf.writestr("lovelaceada_1001_555_essay.txt", b"An essay about rivers and floods.")
        zf.writestr("hoppergrace_LATE_1003_link.html", b"<a href='https://example.org'>x</a>")
    derived = derive_manifest(canvas, tmp_path / "w1")
    sidecar = read_sidecar(derived.manifest)
    assert sidecar is not None and sidecar["export_name"] == "C1-essay_submissions.zip"
    assert [d.document_id for d in read_manifest(derived.manifest).documents] == list(sidecar["documents"])
    (link,) = [r for part in lms_rows([], sidecar) for r in part["submissions"]]
    assert {k: link[k] for k in ("status", "error_code", "document_id", "student_id", "student", "late",
                                 "submitted_file", "cost_cents", "export_name")} == {
        "status": NOT_A_DOCUMENT, "error_code": "link", "document_id": None, "student_id": "1003",
        "student": "hoppergrace", "late": True, "submitted_file": "link.html", "cost_cents": 0,
        "export_name": "C1-essay_submissions.zip",
    }  # fmt: skip
    assert (
        link["error_message"] == "hoppergrace_LATE_1003_link.html: hoppergrace (1003): a URL submission, not a document"
    )

    blackboard = tmp_path / "gradebook_C1_Essay_2026-03-08-09-00-00.zip"
    with zipfile.ZipFile(blackboard, "w") as zf:
        zf.writestr("Essay_aturing_attempt_2026-03-01-10-00-00_draft.txt", b"A first draft about machines.")
        zf.writestr("Essay_aturing_attempt_2026-03-01-10-00-00.txt", b"Name: Alan Turing (aturing)\nComments: hi")
        zf.writestr("Essay_aturing_attempt_2026-03-02-09-30-00_final.txt", b"The final essay about machines.")
        zf.writestr("Essay_aturing_attempt_2026-03-02-09-30-00.txt", b"Name: Alan Turing (aturing)")
    derived = derive_manifest(blackboard, tmp_path / "w2")
    assert derived.manifest.parent.name == "gradebook_C1_Essay"  # the download's time is not the campaign
    sidecar = read_sidecar(derived.manifest)
    assert sidecar is not None
    listed = [r for part in lms_rows([], sidecar) for r in part["submissions"]]
    assert [(r["status"], r["error_code"], r["submitted_file"], r["attempt"], r["student_id"]) for r in listed] == [
        (SUPERSEDED, "older_attempt", "receipt.txt", "2026-03-01-10-00-00", "aturing"),
        (SUPERSEDED, "older_attempt", "draft.txt", "2026-03-01-10-00-00", "aturing"),
        (NOT_A_DOCUMENT, "receipt", "receipt.txt", "2026-03-02-09-30-00", "aturing"),
    ]
    assert all(r["document_id"] is None and r["cost_cents"] == 0 and "aturing" in r["error_message"] for r in listed)
    # Never sent: neither the receipts (the student's comments) nor the older attempt are in the manifest.
    assert [d.metadata["document_id"] for d in read_manifest(derived.manifest).documents] == list(sidecar["documents"])
    assert len(sidecar["documents"]) == 1
