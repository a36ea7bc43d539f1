"""LMS exports built in every documented naming form: planned documents, ids, names and flags."""

from __future__ import annotations

import re
import unicodedata
import zipfile
from pathlib import Path

import pytest

from doccheck.sources.lms import read_export
from doccheck.sources.lms._model import EntryKind
from doccheck.sources.lms._model import make_document_id as ID


def _zip(tmp_path: Path, members: dict[str, bytes], name: str = "export.zip") -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    return path


def _folder(tmp_path: Path, members: dict[str, bytes]) -> Path:
    root = tmp_path / "unzipped"
    for member, data in members.items():
        (root / member).parent.mkdir(parents=True, exist_ok=True)
        (root / member).write_bytes(data)
    return root


def _rows(path: Path, **kw: object) -> list[tuple[str, str, str, str, str, bool | None, str | None]]:
    result = read_export(path, **kw)  # type: ignore[arg-type]
    return [
        (
            f.kind.value,
            f.document_id,
            f.parsed.student_id,
            f.parsed.student,
            f.parsed.submitted_file,
            f.parsed.late,
            f.parsed.attempt,
        )
        for f in result.files
    ]


MOODLE_NEW = {
    "Ada Lovelace_101_assignsubmission_file/essay.docx": b"x",
    "Ada Lovelace_101_assignsubmission_file/notes/appendix.pdf": b"x",
    "Ada Lovelace_101_assignsubmission_onlinetext/onlinetext.html": b"<p>hi</p>",
    "Alan Turing_102_assignsubmission_file/essay.txt": b"x",
}


def test_moodle_folders_current_form(tmp_path: Path) -> None:
    result = read_export(_zip(tmp_path, MOODLE_NEW))
    assert result.lms == "moodle"
    assert _rows(_zip(tmp_path, MOODLE_NEW)) == [
        ("document", ID("moodle", "101", "essay.docx"), "101", "Ada Lovelace", "essay.docx", None, None),
        (
            "document",
            ID("moodle", "101", "notes/appendix.pdf"),
            "101",
            "Ada Lovelace",
            "notes/appendix.pdf",
            None,
            None,
        ),
        ("document", ID("moodle", "101", "onlinetext.html"), "101", "Ada Lovelace", "onlinetext.html", None, None),
        ("document", ID("moodle", "102", "essay.txt"), "102", "Alan Turing", "essay.txt", None, None),
    ]
    assert result.summary() == "Moodle export: 2 participants, 4 files, 1 online-text entries"


def test_moodle_old_trailing_underscore_and_flat_forms_give_the_same_ids(tmp_path: Path) -> None:
    old = {"Ada Lovelace_101_assignsubmission_file_/essay.docx": b"x"}
    flat = {"Ada Lovelace_101_assignsubmission_file_essay.docx": b"x"}
    want = [("document", ID("moodle", "101", "essay.docx"), "101", "Ada Lovelace", "essay.docx", None, None)]
    assert _rows(_zip(tmp_path, old, "old.zip")) == want
    assert _rows(_zip(tmp_path, flat, "flat.zip")) == want


def test_zipped_and_unzipped_downloads_give_the_same_ids(tmp_path: Path) -> None:
    assert _rows(_zip(tmp_path, MOODLE_NEW)) == _rows(_folder(tmp_path, MOODLE_NEW))


def test_moodle_blind_marking_shows_only_the_pseudonym(tmp_path: Path) -> None:
    blind = {
        "Participant_4711_assignsubmission_file/essay.pdf": b"x",
        "Participant_4712_assignsubmission_onlinetext/onlinetext.html": b"<p>x</p>",
    }
    result = read_export(_zip(tmp_path, blind))
    assert [(f.document_id, f.parsed.student, f.parsed.blind) for f in result.files] == [
        (ID("moodle", "4711", "essay.pdf"), "Participant 4711", True),
        (ID("moodle", "4712", "onlinetext.html"), "Participant 4712", True),
    ]
    assert result.summary().endswith("blind marking")


def test_moodle_group_submissions(tmp_path: Path) -> None:
    groups = {
        "Team Red_12_assignsubmission_file/report.docx": b"x",
        "Default group_assignsubmission_file/report.docx": b"x",
    }
    rows = [
        (f.document_id, f.parsed.student, f.parsed.group)
        for f in read_export(_zip(tmp_path, groups), groups=True).files
    ]
    assert rows == [
        (ID("moodle", "default-group", "report.docx"), "Default group", True),
        (ID("moodle", "12", "report.docx"), "Team Red", True),
    ]


def test_canvas_normal_late_anonymous_text_and_link(tmp_path: Path) -> None:
    members = {
        "lovelaceada_1001_55501_Essay Final.docx": b"x",
        "turingalan_LATE_1002_55502_essay.pdf": b"x",
        "turingalan_LATE_1002_text.html": b"<p>x</p>",
        "hopper_1003_link.html": b"<a href=x>",
        "anon_Xk3pQ_55504_paper.pdf": b"x",
    }
    result = read_export(_zip(tmp_path, members))
    assert result.lms == "canvas"
    assert _rows(_zip(tmp_path, members)) == [
        ("document", ID("canvas", "anon_Xk3pQ", "paper.pdf"), "anon_Xk3pQ", "anon_Xk3pQ", "paper.pdf", False, None),
        ("link", ID("canvas", "1003", "link.html"), "1003", "hopper", "link.html", False, None),
        ("document", ID("canvas", "1001", "Essay Final.docx"), "1001", "lovelaceada", "Essay Final.docx", False, None),
        ("document", ID("canvas", "1002", "essay.pdf"), "1002", "turingalan", "essay.pdf", True, None),
        ("document", ID("canvas", "1002", "text.html"), "1002", "turingalan", "text.html", True, None),
    ]
    assert "1 link entries (not checked)" in result.summary()
    assert "2 late" in result.summary()


def test_canvas_replaced_file_keeps_its_id(tmp_path: Path) -> None:
    first = read_export(_zip(tmp_path, {"lovelaceada_1001_555_essay.pdf": b"a"}, "a.zip"))
    second = read_export(_zip(tmp_path, {"lovelaceada_1001_999_essay.pdf": b"b"}, "b.zip"))
    assert first.files[0].document_id == second.files[0].document_id == ID("canvas", "1001", "essay.pdf")


def _canvas_name(sortable: str | None, user_id: int, late: bool, rest: str, anonymous_id: str | None = None) -> str:
    """The entry name as lib/content_zipper.rb builds it (get_filename, sanitize_user_name,
    sanitize_file_name, add_upload_submission): a port kept here so each form is built, not typed."""
    users_name = None
    if anonymous_id is None and sortable is not None:
        users_name = re.sub(r"_(\d+)_", r"\1", sortable).lower()
    ident = f"anon_{anonymous_id}" if anonymous_id is not None else str(user_id)
    called = "_".join(p for p in (users_name, "LATE" if late else None, ident) if p is not None)
    called = "".join(c for c in called if c == "_" or unicodedata.category(c)[0] in "LMN")
    return f"{called}_{rest}"


_ATTACHMENT_UNSAFE = re.compile(r'[\x00/\\:*?"<>|]+')  # sanitize_attachment_filename


def _upload(attachment_id: int, display_name: str) -> str:
    return f"{attachment_id}_{_ATTACHMENT_UNSAFE.sub('_', display_name)}"


def test_canvas_names_as_content_zipper_builds_them(tmp_path: Path) -> None:
    members = {
        _canvas_name("García, José", 1004, False, _upload(601, "Ensayo final.pdf")): b"x",
        _canvas_name("O_Neill, Sam", 1005, True, _upload(602, "2024_draft_v2.docx")): b"x",
        _canvas_name("Lovelace, Ada", 1001, False, _upload(603, 'What? "Why".txt')): b"x",
        _canvas_name("Lovelace, Ada", 1001, False, _upload(604, "text.html")): b"x",
        _canvas_name(None, 0, True, _upload(605, "paper.pdf"), anonymous_id="Xk3pQ"): b"x",
        _canvas_name(None, 0, True, "text.html", anonymous_id="7Hn2a"): b"<p>x</p>",
        _canvas_name("Hopper, Grace", 1003, True, "link.html"): b"<a href=x>",
        # a group assignment: the group's name, and the id of the member who stands for it
        _canvas_name("Group 1", 1007, False, _upload(606, "team.pdf")): b"x",
    }
    assert sorted(members) == [
        "LATE_anon_7Hn2a_text.html",
        "LATE_anon_Xk3pQ_605_paper.pdf",
        "garcíajosé_1004_601_Ensayo final.pdf",
        "group1_1007_606_team.pdf",
        "hoppergrace_LATE_1003_link.html",
        "lovelaceada_1001_603_What_ _Why_.txt",
        "lovelaceada_1001_604_text.html",
        "o_neillsam_LATE_1005_602_2024_draft_v2.docx",
    ]
    result = read_export(_zip(tmp_path, members))
    assert result.lms == "canvas"
    rows = [(f.kind.value, f.parsed.student_id, f.parsed.student, f.parsed.submitted_file, f.parsed.late,
             f.parsed.blind, f.parsed.online_text) for f in result.files]  # fmt: skip
    assert rows == [
        ("document", "anon_7Hn2a", "anon_7Hn2a", "text.html", True, True, True),
        ("document", "anon_Xk3pQ", "anon_Xk3pQ", "paper.pdf", True, True, False),
        ("document", "1004", "garcíajosé", "Ensayo final.pdf", False, False, False),
        ("document", "1007", "group1", "team.pdf", False, False, False),
        ("link", "1003", "hoppergrace", "link.html", True, False, False),
        ("document", "1001", "lovelaceada", "What_ _Why_.txt", False, False, False),
        ("document", "1001", "lovelaceada", "text.html", False, False, False),  # an upload named text.html
        ("document", "1005", "o_neillsam", "2024_draft_v2.docx", True, False, False),
    ]
    assert result.files[0].document_id == ID("canvas", "anon_7Hn2a", "text.html")


def test_canvas_late_flag_is_only_the_capitalised_word(tmp_path: Path) -> None:
    # Canvas lower-cases the name and writes LATE in capitals: a lower-case "late" is part of a name.
    result = read_export(_zip(tmp_path, {"smith_late_1001_601_a.pdf": b"x", "_1002_text.html": b"x"}))
    assert [(f.parsed.student, f.parsed.student_id, f.parsed.late) for f in result.files] == [
        ("", "1002", False),
        ("smith_late", "1001", False),
    ]


def test_canvas_names_canvas_never_writes_are_not_canvas(tmp_path: Path) -> None:
    # Upper-case letters in the name, or no attachment id before an upload's name.
    for name in ("Smith_1001_601_a.pdf", "smith_1001_a.pdf", "smith_1001", "smith_report.pdf"):
        assert read_export(_zip(tmp_path, {name: b"x"}), lms="canvas").files[0].kind is EntryKind.REJECTED, name


BLACKBOARD = {
    "Essay 1_aturing_attempt_2026-03-01-10-00-00_draft.docx": b"x",
    "Essay 1_aturing_attempt_2026-03-01-10-00-00.txt": b"Name: Alan\nComments: hi",
    "Essay 1_aturing_attempt_2026-03-02-09-30-00_final.docx": b"x",
    "Essay 1_aturing_attempt_2026-03-02-09-30-00.txt": b"Name: Alan",
    "Essay 1_alovelace_attempt_2026-03-01-08-00-00_essay.pdf": b"x",
}


def test_blackboard_latest_attempt_by_default(tmp_path: Path) -> None:
    assert _rows(_zip(tmp_path, BLACKBOARD)) == [
        (
            "document",
            ID("blackboard", "alovelace", "essay.pdf"),
            "alovelace",
            "alovelace",
            "essay.pdf",
            None,
            "2026-03-01-08-00-00",
        ),
        (
            "superseded",
            ID("blackboard", "aturing", "receipt.txt"),
            "aturing",
            "aturing",
            "receipt.txt",
            None,
            "2026-03-01-10-00-00",
        ),
        (
            "superseded",
            ID("blackboard", "aturing", "draft.docx"),
            "aturing",
            "aturing",
            "draft.docx",
            None,
            "2026-03-01-10-00-00",
        ),
        (
            "receipt",
            ID("blackboard", "aturing", "receipt.txt"),
            "aturing",
            "aturing",
            "receipt.txt",
            None,
            "2026-03-02-09-30-00",
        ),
        (
            "document",
            ID("blackboard", "aturing", "final.docx"),
            "aturing",
            "aturing",
            "final.docx",
            None,
            "2026-03-02-09-30-00",
        ),
    ]


def test_blackboard_all_attempts(tmp_path: Path) -> None:
    docs = [f.document_id for f in read_export(_zip(tmp_path, BLACKBOARD), attempts="all").documents]
    assert docs == [
        ID("blackboard", "alovelace", "2026-03-01-08-00-00/essay.pdf"),
        ID("blackboard", "aturing", "2026-03-01-10-00-00/draft.docx"),
        ID("blackboard", "aturing", "2026-03-02-09-30-00/final.docx"),
    ]


def test_plain_folder_is_one_document_per_file(tmp_path: Path) -> None:
    root = _folder(tmp_path, {"a.txt": b"x", "sub/b.pdf": b"x", ".DS_Store": b"", "__MACOSX/a.txt": b""})
    result = read_export(root)
    assert result.lms == "plain"
    assert [(f.document_id, f.parsed.student) for f in result.documents] == [
        (ID("plain", "a.txt", ""), "a.txt"),
        (ID("plain", "sub/b.pdf", ""), "b.pdf"),
    ]


def test_forced_lms_rejects_names_of_another_form(tmp_path: Path) -> None:
    result = read_export(_zip(tmp_path, {"random.pdf": b"x"}), lms="moodle")
    assert [(f.kind, f.reason) for f in result.files] == [
        (EntryKind.REJECTED, "not named as a moodle export names files")
    ]
    with pytest.raises(ValueError, match="unknown LMS"):
        read_export(_zip(tmp_path, {"random.pdf": b"x"}), lms="sakai")


def test_document_ids_are_opaque_and_stable() -> None:
    # Pinned: a change here changes every Idempotency-Key of every course that reruns a download.
    assert ID("moodle", "101", "essay.docx") == "moodle-1db28daff91d-023dc57e57167641"
