"""Folders of outputs on fsspec's memory filesystem and the local disk: a folder published behind
its marker (out first, in last; a publish killed midway leaves no marker and the next one completes
it), listings of one level and of a whole prefix, copies inside a store."""

from __future__ import annotations

from pathlib import Path

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from doccheck.storage import UserPath, copy_file, files_under, publish_tree, resolve, subfolders


@pytest.fixture
def memory(memory_store: MemoryFileSystem) -> MemoryFileSystem:
    """The shared empty memory store (tests/fixtures/memory_store.py), by this file's name."""
    return memory_store


def _folder(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


RUN = {"documents.parquet": b"d1", "report.html": b"<html>", "files/a.pdf": b"%PDF", "run.json": b"{}"}


def _target(where: str, tmp_path: Path) -> UserPath:
    return resolve("memory://out/reports/run-1") if where == "memory" else tmp_path / "out" / "run-1"


@pytest.mark.parametrize("where", ["memory", "local"])
def test_a_folder_is_published_with_its_marker_last(where: str, memory: MemoryFileSystem, tmp_path: Path) -> None:
    target = _target(where, tmp_path)
    puts: list[str] = []
    original = memory.put_file

    def recorded(lpath: str, rpath: str, **kw: object) -> object:
        puts.append(rpath.rsplit("run-1/", 1)[-1])
        return original(lpath, rpath, **kw)

    memory.put_file = recorded  # type: ignore[method-assign]
    try:
        assert publish_tree(_folder(tmp_path / "stage", RUN), target, marker="run.json") == 4
    finally:
        del memory.put_file
    if where == "memory":
        assert puts[-1] == "run.json" and sorted(puts) == sorted(RUN)
    assert {name: target.joinpath(name).read_bytes() for name in RUN} == RUN


def test_a_publish_killed_midway_leaves_no_marker_and_the_next_completes_it(
    memory: MemoryFileSystem, tmp_path: Path
) -> None:
    target = resolve("memory://out/reports/run-1")
    stage = _folder(tmp_path / "stage", RUN)
    original, done = memory.put_file, []

    def dies_after_two(lpath: str, rpath: str, **kw: object) -> object:
        if len(done) == 2:
            raise ConnectionError("killed")
        done.append(rpath)
        return original(lpath, rpath, **kw)

    memory.put_file = dies_after_two  # type: ignore[method-assign]
    try:
        with pytest.raises(ConnectionError):
            publish_tree(stage, target, marker="run.json")
    finally:
        del memory.put_file
    assert len(files_under(target)) == 2 and "run.json" not in files_under(target)
    assert publish_tree(stage, target, marker="run.json") == 4
    assert sorted(files_under(target)) == sorted(RUN)


@pytest.mark.parametrize("where", ["memory", "local"])
def test_a_republished_folder_loses_its_marker_first_and_its_leftovers(
    where: str, memory: MemoryFileSystem, tmp_path: Path
) -> None:
    target = _target(where, tmp_path)
    publish_tree(_folder(tmp_path / "one", {**RUN, "groups/a.html": b"g"}), target, marker="run.json")
    seen: list[set[str]] = []
    if where == "memory":
        original = memory.put_file

        def looking(lpath: str, rpath: str, **kw: object) -> object:
            seen.append(set(files_under(target)))
            return original(lpath, rpath, **kw)

        memory.put_file = looking  # type: ignore[method-assign]
    try:
        publish_tree(_folder(tmp_path / "two", {"documents.parquet": b"d2", "run.json": b"{2}"}), target,
                     marker="run.json")  # fmt: skip
    finally:
        if where == "memory":
            del memory.put_file
    assert all("run.json" not in names for names in seen)  # never counted while it changed
    assert {n: e.size for n, e in files_under(target).items()} == {"documents.parquet": 2, "run.json": 3}


def test_a_folder_without_its_marker_is_published_uncounted(memory: MemoryFileSystem, tmp_path: Path) -> None:
    target = resolve("memory://out/reports/run-1")
    publish_tree(_folder(tmp_path / "one", RUN), target, marker="run.json")
    publish_tree(_folder(tmp_path / "two", {"documents.parquet": b"d2"}), target, marker="run.json")
    assert sorted(files_under(target)) == ["documents.parquet"]


@pytest.mark.parametrize("where", ["memory", "local"])
def test_listings_of_one_level_and_of_a_prefix(where: str, memory: MemoryFileSystem, tmp_path: Path) -> None:
    base = resolve("memory://out/reports") if where == "memory" else tmp_path / "reports"
    publish_tree(_folder(tmp_path / "a", RUN), base / "run-a", marker="run.json")
    publish_tree(_folder(tmp_path / "b", {"run.json": b"{}"}), base / "run-b", marker="run.json")
    (base / "catalog.duckdb").write_bytes(b"c")
    assert [p.name for p in subfolders(base)] == ["run-a", "run-b"]
    assert sorted(files_under(base / "run-a")) == sorted(RUN)
    assert files_under(base / "run-a")["files/a.pdf"].size == 4
    assert sorted(files_under(base / "run-a", recursive=False)) == ["documents.parquet", "report.html", "run.json"]
    assert subfolders(base / "nothing") == [] and files_under(base / "nothing") == {}


@pytest.mark.parametrize("where", ["memory", "local"])
def test_a_copy_is_whole(where: str, memory: MemoryFileSystem, tmp_path: Path) -> None:
    base = resolve("memory://out") if where == "memory" else tmp_path
    (base / "a" / "x.parquet").parent.mkdir(parents=True, exist_ok=True)
    (base / "a" / "x.parquet").write_bytes(b"rows")
    copy_file(base / "a" / "x.parquet", base / "tables" / "x" / "run=1" / "x.parquet")
    assert (base / "tables" / "x" / "run=1" / "x.parquet").read_bytes() == b"rows"


def test_the_scratch_folder_of_a_store_is_local_and_the_same_for_every_process(tmp_path: Path) -> None:
    import subprocess
    import sys

    from doccheck.storage import scratch_folder

    assert scratch_folder(tmp_path) == tmp_path
    here = scratch_folder(resolve("memory://out/reports"))
    code = (
        "from doccheck.storage import resolve, scratch_folder; print(scratch_folder(resolve('memory://out/reports')))"
    )
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert isinstance(here, Path) and str(here) == there and here != scratch_folder(resolve("memory://out/other"))
