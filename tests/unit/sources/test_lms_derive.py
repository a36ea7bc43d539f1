"""The manifest derived from an export: read by the manifest reader, the same for zip and folder."""

from __future__ import annotations

import zipfile
from pathlib import Path

from doccheck.sources.lms._derive import derive_manifest, export_campaign
from doccheck.sources.manifest import read_manifest

MEMBERS = {
    "Ada Lovelace_101_assignsubmission_file/essay.txt": b"An essay about rivers and floods.",
    "Ada Lovelace_101_assignsubmission_onlinetext/onlinetext.html": b"<p>Online text entry here.</p>",
    "Alan Turing_102_assignsubmission_file/essay.txt": b"Another essay on machines.",
    "Alan Turing_102_assignsubmission_file/tool.exe": b"MZ",
}


def _exports(tmp_path: Path) -> tuple[Path, Path]:
    zpath = tmp_path / "dl" / "C101-Essay 1-42.zip"
    zpath.parent.mkdir()
    with zipfile.ZipFile(zpath, "w") as zf:
        for name, data in MEMBERS.items():
            zf.writestr(name, data)
    folder = tmp_path / "unz" / "C101-Essay 1-42 (1)"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(zpath) as zf:
        zf.extractall(folder)
    return zpath, folder


def test_campaign_is_the_same_for_every_download_of_one_assignment(tmp_path: Path) -> None:
    names = {
        # Canvas (content_zipper.rb assignment_zip_filename + make_zip_tmpdir), a browser's second copy
        "C101-essay-1_submissions.zip": "C101-essay-1_submissions",
        "C101-essay-1_submissions (1).zip": "C101-essay-1_submissions",
        # Blackboard: the download's time is in the name; two downloads are one assignment
        "gradebook_C101_Essay 1_2026-03-01-10-00-00.zip": "gradebook_C101_Essay 1",
        "gradebook_C101_Essay 1_2026-03-08-09-12-13.zip": "gradebook_C101_Essay 1",
        # Only Blackboard's own prefix loses a trailing time
        "essays_2026-03-01-10-00-00.zip": "essays_2026-03-01-10-00-00",
    }
    for name, campaign in names.items():
        path = tmp_path / name
        path.write_bytes(b"")
        assert export_campaign(path) == campaign, name


def test_zip_and_folder_give_the_same_manifest_and_campaign(tmp_path: Path) -> None:
    zpath, folder = _exports(tmp_path)
    assert export_campaign(zpath) == export_campaign(folder) == "C101-Essay 1-42"
    one = derive_manifest(zpath, tmp_path / "w1")
    two = derive_manifest(folder, tmp_path / "w2")
    assert one.manifest.name == "C101-Essay 1-42.csv"
    a = read_manifest(one.manifest)
    b = read_manifest(two.manifest)
    assert not a.rejections
    assert [(d.document_id, d.content_hash, d.name) for d in a.documents] == [
        (d.document_id, d.content_hash, d.name) for d in b.documents
    ]
    assert len(a.documents) == 3
    assert one.result.summary() == "Moodle export: 2 participants, 3 files, 1 online-text entries, 1 rejected"
    # Nothing sent to the service names the student: name and metadata hold only the opaque id.
    for doc in a.documents:
        assert doc.metadata == {"document_id": doc.document_id}
        assert doc.name == doc.document_id and doc.name.startswith("moodle-")
    assert "Lovelace" not in one.manifest.read_text().split("\n", 2)[1].split(",")[0]


def test_a_second_derivation_drops_the_last_downloads_files(tmp_path: Path) -> None:
    zpath, _ = _exports(tmp_path)
    derive_manifest(zpath, tmp_path / "w")
    stale = tmp_path / "w" / "C101-Essay 1-42" / "files" / "old" / "gone.txt"
    stale.parent.mkdir()
    stale.write_text("from last week")
    again = derive_manifest(zpath, tmp_path / "w")
    assert not stale.exists()
    assert len(read_manifest(again.manifest).documents) == 3
