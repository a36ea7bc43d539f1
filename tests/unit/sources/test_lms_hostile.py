"""A hostile export is refused entry by entry; the rest of it is still read."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from doccheck.sources.lms import UnsafeExport, read_export
from doccheck.sources.lms._model import EntryKind
from doccheck.sources.lms._model import make_document_id as ID
from doccheck.sources.lms._walk import ExportLimits, copy_member


def _hostile_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("Ada Lovelace_101_assignsubmission_file/essay.txt", b"my own essay")
        zf.writestr("Eve Mallory_103_assignsubmission_file/../../../etc/passwd.txt", b"x")
        zf.writestr("/abs/Eve Mallory_103_assignsubmission_file/abs.txt", b"x")
        link = zipfile.ZipInfo("Eve Mallory_103_assignsubmission_file/link.txt")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/shadow")
        zf.writestr("Eve Mallory_103_assignsubmission_file/bomb.txt", b"\0" * (4 * 1024 * 1024))
        zf.writestr("Eve Mallory_103_assignsubmission_file/more.zip", b"PK")
        zf.writestr("Eve Mallory_103_assignsubmission_file/tool.exe", b"MZ")
    return path


def test_each_hostile_entry_is_refused_with_its_reason_and_student(tmp_path: Path) -> None:
    limits = ExportLimits(max_ratio=100, ratio_floor_bytes=1024 * 1024)
    result = read_export(_hostile_zip(tmp_path / "x.zip"), limits=limits)
    assert result.lms == "moodle"
    assert [f.document_id for f in result.documents] == [ID("moodle", "101", "essay.txt")]
    refused = {f.entry: f.reason for f in result.files if f.kind is EntryKind.REJECTED}
    bomb = refused.pop("Eve Mallory_103_assignsubmission_file/bomb.txt") or ""
    assert bomb.startswith("Eve Mallory (103): refused: a compression ratio of ")
    assert refused == {
        "/abs/Eve Mallory_103_assignsubmission_file/abs.txt": "refused: an absolute path",
        "Eve Mallory_103_assignsubmission_file/../../../etc/passwd.txt": (
            "Eve Mallory (103): refused: a '..' that leaves the export's folder"
        ),
        "Eve Mallory_103_assignsubmission_file/link.txt": "Eve Mallory (103): refused: a symbolic link",
        "Eve Mallory_103_assignsubmission_file/more.zip": "Eve Mallory (103): a zip inside the export is not opened",
        "Eve Mallory_103_assignsubmission_file/tool.exe": "Eve Mallory (103): file type of 'tool.exe' is not supported",
    }


def test_a_folder_symlink_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "export"
    (root / "Ada Lovelace_101_assignsubmission_file").mkdir(parents=True)
    (root / "Ada Lovelace_101_assignsubmission_file/essay.txt").write_text("mine")
    (tmp_path / "secret.txt").write_text("secret")
    (root / "Ada Lovelace_101_assignsubmission_file/steal.txt").symlink_to(tmp_path / "secret.txt")
    result = read_export(root)
    assert [(f.kind.value, f.reason) for f in result.files] == [
        ("document", None),
        ("rejected", "Ada Lovelace (101): refused: a symbolic link"),
    ]


def test_too_many_entries_stop_the_read(tmp_path: Path) -> None:
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(20):
            zf.writestr(f"f{i}.txt", b"x")
    with pytest.raises(UnsafeExport, match="entries"):
        read_export(path, limits=ExportLimits(max_entries=10))


def test_copy_member_stops_at_the_bound_whatever_the_zip_declares(tmp_path: Path) -> None:
    path = tmp_path / "z.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.txt", b"a" * 10_000)
    out = tmp_path / "out.bin"
    with out.open("wb") as fh, pytest.raises(UnsafeExport, match="inflates past"):
        copy_member(path, "a.txt", fh, ExportLimits(max_member_bytes=1000))
    with out.open("wb") as fh:
        assert copy_member(path, "a.txt", fh) == 10_000
