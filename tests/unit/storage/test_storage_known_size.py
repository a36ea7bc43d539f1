"""A remote file whose size planning or a listing recorded opens without asking its store, and
an export's folder on a store is walked from its one listing (``Listing.files``).

fsspec's memory filesystem answers without ranged reads, so the first tests use a store whose
files read by ranges as s3fs', gcsfs' and adlfs' do (``AbstractBufferedFile``) and count the
HEADs (``info``) and the ranged GETs."""

from __future__ import annotations

from typing import Any, cast

import pytest
from fsspec.implementations.memory import MemoryFileSystem
from fsspec.spec import AbstractBufferedFile

from doccheck.storage import BLOCK_BYTES, Listing, UserPath, local_copy, open_input, resolve


class _RangedFile(AbstractBufferedFile):  # type: ignore[misc]
    def _fetch_range(self, start: int, end: int) -> bytes:
        self.fs.gets.append((start, end))
        if self.path not in self.fs.blobs:
            raise FileNotFoundError(self.path)
        return bytes(self.fs.blobs[self.path][start:end])


class _RangedStore:
    """A store of ``blobs`` whose files read by ranges; ``heads`` and ``gets`` count its requests."""

    def __init__(self, blobs: dict[str, bytes]) -> None:
        self.blobs = blobs
        self.heads: list[str] = []
        self.gets: list[tuple[int, int]] = []

    def info(self, path: str, **_: Any) -> dict[str, Any]:
        self.heads.append(path)
        if path not in self.blobs:
            raise FileNotFoundError(path)
        return {"name": path, "size": len(self.blobs[path]), "type": "file"}

    def open(self, path: str, mode: str = "rb", block_size: int = 0, cache_type: str = "", **kw: Any) -> Any:
        return _RangedFile(self, path, mode, block_size, cache_type=cache_type, **kw)


class _Location:
    def __init__(self, fs: _RangedStore, path: str) -> None:
        self.fs, self.path = fs, path
        self.suffix = "." + path.rsplit(".", 1)[-1]


def _at(fs: _RangedStore, path: str) -> UserPath:
    return cast("UserPath", _Location(fs, path))


def test_a_known_size_opens_and_reads_with_no_head() -> None:
    data = bytes(range(256)) * (3 * BLOCK_BYTES // 256)
    store = _RangedStore({"b/essay.pdf": data})
    with open_input(_at(store, "b/essay.pdf"), size=len(data)) as f:
        assert b"".join(iter(lambda: f.read(BLOCK_BYTES), b"")) == data
    assert store.heads == [] and store.gets
    assert max(end - start for start, end in store.gets) <= 2 * BLOCK_BYTES  # read ahead a block at a time


def test_a_larger_block_reads_ahead_further() -> None:
    data = bytes(range(256)) * (8 * BLOCK_BYTES // 256)
    store = _RangedStore({"b/export.zip": data})
    with open_input(_at(store, "b/export.zip"), size=len(data), block_bytes=4 * BLOCK_BYTES) as f:
        while f.read(BLOCK_BYTES):
            pass
    assert len(store.gets) == 2  # 8 blocks read, in two ranged reads of 5 blocks and 3


def test_an_unknown_size_asks_the_store() -> None:
    store = _RangedStore({"b/essay.pdf": b"abc"})
    with open_input(_at(store, "b/essay.pdf")) as f:
        assert f.read() == b"abc"
    assert store.heads == ["b/essay.pdf"]


def test_a_file_deleted_since_its_listing_is_missing_at_its_first_read() -> None:
    store = _RangedStore({})
    with open_input(_at(store, "b/gone.pdf"), size=10) as f, pytest.raises(FileNotFoundError):
        f.read()
    assert store.heads == []


def test_a_local_copy_of_a_known_size_asks_no_head() -> None:
    store = _RangedStore({"b/essay.docx": b"x" * 3000})
    with local_copy(_at(store, "b/essay.docx"), max_bytes=5000, size=3000) as copy:
        assert copy.read_bytes() == b"x" * 3000
    assert store.heads == []


def test_a_listing_names_the_files_under_its_prefix(memory_store: MemoryFileSystem) -> None:
    memory_store.pipe({"/t/exp/b/2.txt": b"22", "/t/exp/a.txt": b"1", "/t/exp-other/c.txt": b"no", "/t/x.txt": b"no"})
    listing = Listing(resolve("memory://t/exp"))
    assert [(name, entry.size) for name, entry in listing.files()] == [("a.txt", 1), ("b/2.txt", 2)]
