"""The seam's reads for a manifest's rows (issue 48): one file described, a small file read whole
and bounded, a store's file with a local file's API, and a store library's errors as StorageError."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from botocore.exceptions import BotoCoreError
from fsspec.implementations.memory import MemoryFileSystem

from doccheck.errors import StorageError
from doccheck.storage import Listing, as_storage_error, describe, open_input, read_bounded, resolve
from tests.fixtures.memory_bucket import Requests

Bucket = tuple[MemoryFileSystem, Requests]


def test_one_file_described_by_one_request(bucket: Bucket, tmp_path: Path) -> None:
    fs, requests = bucket
    fs.pipe({"/t/a/m.csv": b"document_id\n", "/t/a/x.txt": b"x"})
    entry = describe(resolve("memory://t/a/m.csv"))
    assert entry is not None and entry.size == 12
    assert describe(resolve("memory://t/a/none.csv")) is None
    assert describe(resolve("memory://t/a")) is None  # a prefix is not a file
    assert sum(requests.heads.values()) == 3 and not requests.lists
    (tmp_path / "m.csv").write_bytes(b"abc")
    local = describe(tmp_path / "m.csv")
    assert local is not None and local.size == 3 and describe(tmp_path / "none.csv") is None


def test_a_rewrite_of_the_same_size_is_another_identity(bucket: Bucket) -> None:
    """The memory filesystem has no ETag: its creation time stands in for one."""
    fs, _ = bucket
    fs.pipe({"/t/a/x.txt": b"abc"})
    before = Listing(resolve("memory://t/a")).entry(resolve("memory://t/a/x.txt"))
    fs.pipe({"/t/a/x.txt": b"xyz"})
    after = Listing(resolve("memory://t/a")).entry(resolve("memory://t/a/x.txt"))
    assert before is not None and after is not None and before.identity != after.identity


def test_a_small_file_is_read_whole_within_its_bound(bucket: Bucket) -> None:
    fs, requests = bucket
    fs.pipe({"/t/a/x.txt": b"0123456789"})
    remote = resolve("memory://t/a/x.txt")
    assert read_bounded(remote, max_bytes=10, size=10) == b"0123456789"
    with pytest.raises(StorageError, match="over the 9 byte limit"):
        read_bounded(remote, max_bytes=9)
    assert requests.gets["/t/a/x.txt"] == 2 and not requests.heads


def test_a_stores_file_reads_like_a_local_one(bucket: Bucket) -> None:
    fs, _ = bucket
    fs.pipe({"/t/a/m.jsonl": b'{"a": 1}\n' + b"x" * 5000 + b"\n" + b'{"b": 2}\n'})
    with open_input(resolve("memory://t/a/m.jsonl")) as handle:
        assert handle.readline(100) == b'{"a": 1}\n'
        assert handle.readline(100) == b"x" * 100  # a long line is read no further than asked
        handle.seek(5010)
        assert handle.tell() == 5010 and handle.readline() == b'{"b": 2}\n'
    text = io.TextIOWrapper(open_input(resolve("memory://t/a/m.jsonl")), encoding="utf-8")
    assert text.readline() == '{"a": 1}\n'
    text.close()


class FakeStoreError(BotoCoreError):
    """As botocore's ``EndpointConnectionError`` once its retries are spent: not an OSError."""

    fmt = "Could not connect to the endpoint URL: {endpoint_url}"


def test_a_store_librarys_error_is_a_storage_error_without_its_text(
    bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, _ = bucket
    fs.pipe({"/t/a/x.txt": b"0123456789"})
    remote = resolve("memory://t/a/x.txt")
    with pytest.raises(StorageError) as caught, as_storage_error(remote):
        raise FakeStoreError(endpoint_url="http://user-secret@endpoint")
    assert str(caught.value) == "memory://t/a/x.txt cannot be read: the store failed (FakeStoreError)"
    with pytest.raises(FileNotFoundError), as_storage_error(remote):  # an OSError is already what readers catch
        raise FileNotFoundError("x")
    with pytest.raises(KeyError), as_storage_error(remote):  # a bug is not the store's
        raise KeyError("x")

    def failing(self: object, *args: object, **kwargs: object) -> int:
        raise FakeStoreError(endpoint_url="http://endpoint")

    handle = open_input(remote)
    monkeypatch.setattr(type(handle.raw._handle), "read", failing)  # type: ignore[attr-defined]
    with pytest.raises(StorageError, match="FakeStoreError"):
        handle.read()


def test_an_s3_location_makes_a_working_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """The seam's options make an s3fs client (no request is sent: the session and client are
    made locally), retrying as botocore's standard mode does; an option s3fs does not take
    would only fail at the first request."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    fs = resolve("s3://bucket/course-a/manifest.csv").fs  # type: ignore[union-attr]
    fs.connect()
    assert fs.s3.meta.config.retries == {"mode": "standard", "total_max_attempts": 11}
