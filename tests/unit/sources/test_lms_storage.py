"""An LMS export and its roster at a URL (``memory://`` standing for ``s3://``): a zip read over the
seam's seekable file, a folder walked from one listing, the same bounds and refusals as on the
disk, and the same manifest (ids, content, campaign) as the local download gives."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from doccheck.errors import RosterError
from doccheck.sources.lms import _roster as roster_module
from doccheck.sources.lms import as_manifest, export_campaign, is_export, read_export, read_sidecar
from doccheck.sources.lms._derive import derive_manifest
from doccheck.sources.lms._model import EntryKind
from doccheck.sources.lms._roster import read_roster
from doccheck.sources.lms._walk import ExportLimits, member_order, open_export
from doccheck.sources.manifest import read_manifest
from doccheck.storage import resolve
from tests.unit.sources.test_lms_hostile import _hostile_zip

MEMBERS = {
    "Grace Hopper_105_assignsubmission_file/report.txt": b"Compilers translate programs for machines.",
    "Ada Lovelace_101_assignsubmission_file/essay.txt": b"Engines weave algebraic patterns.",
    "Ada Lovelace_101_assignsubmission_onlinetext/onlinetext.html": b"<p>An online answer.</p>",
    "Alan Turing_102_assignsubmission_file/essay.txt": b"Machines may one day think.",
}
ROSTER = (
    "\ufeffIdentifier,Full name,Email address,Status\n"
    "Participant 101,Ada Lovelace,ada@example.org,Submitted\n"
    "Participant 107,Katherine Johnson,kj@example.org,No submission\n"
)
EXPORT = "C101-Essay 1-42"


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():  # written out of name order, as an LMS may
            zf.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture
def calls(memory_store: MemoryFileSystem, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The store's listings (``find``), HEADs (``info``) and opened files, by path."""
    seen: dict[str, list[str]] = {"find": [], "info": [], "open": []}
    for name, key in (("find", "find"), ("info", "info"), ("_open", "open")):
        original = getattr(MemoryFileSystem, name)

        def counted(self: MemoryFileSystem, path: str, *a: Any, _o: Any = original, _k: str = key, **kw: Any) -> Any:
            if _k != "open" or (a[0] if a else kw.get("mode", "rb")).startswith("r"):  # reads, not the test's writes
                seen[_k].append(path)
            return _o(self, path, *a, **kw)

        monkeypatch.setattr(MemoryFileSystem, name, counted)
    return seen


def _local_zip(tmp_path: Path) -> Path:
    path = tmp_path / "dl" / f"{EXPORT}.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_zip_bytes(MEMBERS))
    return path


def _rows(manifest: Path) -> list[tuple[str, str, str]]:
    return [(d.document_id, d.content_hash, d.name) for d in read_manifest(manifest).documents]


def test_a_zip_at_a_url_gives_the_local_downloads_manifest(
    memory_store: MemoryFileSystem, calls: dict[str, list[str]], tmp_path: Path
) -> None:
    memory_store.pipe_file(f"/term/exports/{EXPORT}.zip", _zip_bytes(MEMBERS))
    url = f"memory://term/exports/{EXPORT}.zip"
    assert is_export(url) and export_campaign(url) == EXPORT
    remote = derive_manifest(url, tmp_path / "w1")
    local = derive_manifest(_local_zip(tmp_path), tmp_path / "w2")
    assert _rows(remote.manifest) == _rows(local.manifest) and len(_rows(remote.manifest)) == 4
    assert remote.manifest.read_text() == local.manifest.read_text()  # the same rows, in the same order
    assert remote.manifest.is_relative_to(tmp_path / "w1")  # copies on the local disk: readable at send time
    assert calls["open"] == [f"/term/exports/{EXPORT}.zip"]  # its directory read once, for the walk and the copies
    sidecar = read_sidecar(remote.manifest)
    assert sidecar is not None and sidecar["export_name"] == f"{EXPORT}.zip"


def test_a_zips_members_are_copied_in_the_order_their_bytes_lie(memory_store: MemoryFileSystem) -> None:
    memory_store.pipe_file("/term/x.zip", _zip_bytes(MEMBERS))
    with open_export(resolve("memory://term/x.zip")) as opened:
        assert member_order(opened, sorted(MEMBERS)) == list(MEMBERS)


def test_a_folder_at_a_prefix_is_walked_from_one_listing(
    memory_store: MemoryFileSystem, calls: dict[str, list[str]], tmp_path: Path
) -> None:
    memory_store.pipe({f"/term/exports/{EXPORT}/{name}": data for name, data in MEMBERS.items()})
    memory_store.pipe_file(f"/term/exports/{EXPORT} (2)/other.txt", b"another download beside it")
    url = f"memory://term/exports/{EXPORT}"
    remote = derive_manifest(url, tmp_path / "w1")
    assert export_campaign(url) == EXPORT
    assert _rows(remote.manifest) == _rows(derive_manifest(_local_zip(tmp_path), tmp_path / "w2").manifest)
    assert len(calls["find"]) == 1 and calls["info"] == []  # one LIST; sizes from it, no HEAD per document


def test_a_hostile_export_at_a_url_is_refused_entry_by_entry(memory_store: MemoryFileSystem, tmp_path: Path) -> None:
    memory_store.pipe_file("/term/x.zip", _hostile_zip(tmp_path / "x.zip").read_bytes())
    limits = ExportLimits(max_ratio=100, ratio_floor_bytes=1024 * 1024)
    remote = read_export("memory://term/x.zip", limits=limits)
    local = read_export(tmp_path / "x.zip", limits=limits)
    assert [(f.entry, f.kind, f.reason) for f in remote.files] == [(f.entry, f.kind, f.reason) for f in local.files]
    memory_store.pipe(
        {
            "/term/f/Ada Lovelace_101_assignsubmission_file/essay.txt": b"mine",
            "/term/f/Eve Mallory_103_assignsubmission_file/../../x.txt": b"x",  # a key may say anything
            "/term/f/Eve Mallory_103_assignsubmission_file/a\\b.txt": b"x",
        }
    )
    folder = read_export("memory://term/f")
    assert [f.kind for f in folder.files].count(EntryKind.DOCUMENT) == 1
    reasons = sorted(f.reason or "" for f in folder.files if f.kind is EntryKind.REJECTED)
    assert len(reasons) == 2 and all("refused: a " in r for r in reasons)


def test_a_roster_at_a_url(memory_store: MemoryFileSystem, calls: dict[str, list[str]], tmp_path: Path) -> None:
    memory_store.pipe_file("/term/grades.csv", ROSTER.encode())
    (tmp_path / "grades.csv").write_text(ROSTER, encoding="utf-8")
    assert read_roster("memory://term/grades.csv") == read_roster(tmp_path / "grades.csv")
    assert calls["info"] == []
    memory_store.pipe_file(f"/term/exports/{EXPORT}.zip", _zip_bytes(MEMBERS))
    manifest, result = as_manifest(
        f"memory://term/exports/{EXPORT}.zip", tmp_path / "w", roster="memory://term/grades.csv"
    )
    assert result is not None and Path(manifest).is_file()
    sidecar = json.loads(Path(manifest).with_name(f"{EXPORT}.lms.json").read_text())
    assert [r["student"] for r in sidecar["no_submission"]] == ["Katherine Johnson"]


def test_a_roster_at_a_url_over_the_cap_is_refused(
    memory_store: MemoryFileSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_store.pipe_file("/term/grades.csv", ROSTER.encode())
    monkeypatch.setattr(roster_module, "MAX_ROSTER_BYTES", 20)
    with pytest.raises(RosterError, match="over 20 bytes"):
        read_roster("memory://term/grades.csv")


def test_a_manifest_at_a_url_is_no_export_and_costs_no_request(calls: dict[str, list[str]]) -> None:
    for url in ("memory://term/m.csv", "memory://term/m.parquet", "memory://term/m.jsonl"):
        assert not is_export(url)
        assert read_sidecar(url) is None
    assert calls == {"find": [], "info": [], "open": []}
