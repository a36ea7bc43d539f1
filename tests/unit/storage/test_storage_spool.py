"""The run's spool (issue 48): the bytes planning read of a store's file are what its sending reads,
once, with no second GET; capped in bytes, bounded like a read from the store, removed with the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from doccheck.errors import StorageError
from doccheck.storage import local_copy, read_bounded, resolve, spool, spooling
from tests.fixtures.memory_bucket import Requests

Bucket = tuple[MemoryFileSystem, Requests]


def test_a_spooled_file_is_read_once_from_the_spool_then_from_its_store(bucket: Bucket) -> None:
    fs, requests = bucket
    fs.pipe({"/t/a/x.txt": b"planned words"})
    remote = resolve("memory://t/a/x.txt")
    with spooling() as run:
        assert spool(remote, b"planned words")
        assert read_bounded(remote, max_bytes=100, size=13) == b"planned words"
        assert not requests.gets  # no second read of the store
        assert run.used == 0 and run.taken == 1  # dropped once read
        assert read_bounded(remote, max_bytes=100, size=13) == b"planned words"
    assert requests.gets["/t/a/x.txt"] == 1


def test_the_spool_is_the_content_planned_not_the_object_rewritten_since(bucket: Bucket) -> None:
    """A document sent from the spool is sent with the bytes its Idempotency-Key was made from."""
    fs, _ = bucket
    fs.pipe({"/t/a/x.txt": b"first words"})
    remote = resolve("memory://t/a/x.txt")
    with spooling():
        spool(remote, b"first words")
        fs.pipe({"/t/a/x.txt": b"other words"})
        with local_copy(remote, max_bytes=100, size=11) as copy:
            assert copy.read_bytes() == b"first words"


def test_a_read_of_another_size_or_past_its_bound_is_not_served_from_the_spool(bucket: Bucket) -> None:
    fs, requests = bucket
    fs.pipe({"/t/a/x.txt": b"0123456789", "/t/a/y.txt": b"0123456789"})
    x, y = resolve("memory://t/a/x.txt"), resolve("memory://t/a/y.txt")
    with spooling() as run:
        spool(x, b"0123456789")
        spool(y, b"0123456789")
        assert read_bounded(x, max_bytes=100, size=12) == b"0123456789"  # told another size: the store's
        assert requests.gets["/t/a/x.txt"] == 1 and run.held == 10  # and x's entry is gone
        with pytest.raises(StorageError, match="over the 9 byte limit"):
            read_bounded(y, max_bytes=9)
        with pytest.raises(StorageError, match="over the 9 byte limit"), local_copy(y, max_bytes=9):
            pass


def test_the_spool_keeps_no_more_than_its_cap_and_is_removed_with_the_run(bucket: Bucket) -> None:
    fs, requests = bucket
    names = [f"/t/a/{i} Ünïcode student name.txt" for i in range(3)]
    fs.pipe(dict.fromkeys(names, b"x" * 40))
    paths = [resolve(f"memory:/{name}") for name in names]
    with spooling(max_bytes=100, memory_bytes=0) as run:  # on the disk
        assert [spool(p, b"x" * 40) for p in paths] == [True, True, False]
        assert run.full == 1 and run.used == 80
        held = sorted(f.name for f in run.folder.iterdir())
        assert held == ["00000000", "00000001"]  # named by a counter, never by the student's file name
        assert run.folder.stat().st_mode & 0o077 == 0  # the owner's alone
        assert read_bounded(paths[2], max_bytes=100, size=40) == b"x" * 40  # not kept: from its store
        assert requests.gets == {names[2]: 1}
    assert not run.folder.exists()  # the entries never read went with it


def test_nothing_is_spooled_without_a_run_or_for_a_local_file(bucket: Bucket, tmp_path: Path) -> None:
    fs, _ = bucket
    fs.pipe({"/t/a/x.txt": b"words"})
    assert not spool(resolve("memory://t/a/x.txt"), b"words")
    local = tmp_path / "x.txt"
    local.write_bytes(b"words")
    with spooling() as run:
        assert not spool(local, b"words") and run.kept == 0


def test_small_files_are_held_in_memory_up_to_its_cap_then_on_the_disk(bucket: Bucket) -> None:
    fs, requests = bucket
    fs.pipe({f"/t/a/{i}.txt": b"y" * 40 for i in range(3)})
    paths = [resolve(f"memory://t/a/{i}.txt") for i in range(3)]
    with spooling(max_bytes=1000, memory_bytes=80) as run:
        assert all(spool(p, b"y" * 40) for p in paths)
        assert (run.held, run.used) == (80, 40)  # two in memory, the third on the disk
        assert [f.name for f in run.folder.iterdir()] == ["00000000"]
        assert [read_bounded(p, max_bytes=100, size=40) for p in paths] == [b"y" * 40] * 3
        assert (run.held, run.used, run.taken) == (0, 0, 3) and not requests.gets
        assert spool(paths[0], b"y" * 40) and run.held == 40  # room again once taken
