"""The storage seam on fsspec's memory filesystem and the local disk: locations, confinement,
listings, bounded copies and whole-object writes (the S3 server's tests are integration tests)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fsspec.implementations.memory import MemoryFileSystem
from upath import UPath

from doccheck.errors import OutsideLocation, SettingsError, StorageError
from doccheck.storage import (
    Listing,
    child,
    display,
    file_name,
    is_remote,
    local_copy,
    open_input,
    open_output,
    remove_tree,
    resolve,
    storage_options,
    upload_tree,
    write_bytes,
)


@pytest.fixture
def memory(memory_store: MemoryFileSystem) -> MemoryFileSystem:
    """The shared empty memory store (tests/fixtures/memory_store.py), by this file's name."""
    return memory_store


def test_a_bare_path_stays_a_pathlib_path(tmp_path: Path) -> None:
    assert type(resolve(str(tmp_path / "m.csv"))) is type(tmp_path)
    assert resolve(tmp_path) == tmp_path
    assert resolve(f"file://{tmp_path}/m.csv") == tmp_path / "m.csv"
    assert not is_remote(resolve(tmp_path))


def test_a_url_becomes_a_path_on_its_store(memory: MemoryFileSystem) -> None:
    p = resolve("memory://term/course-a/manifest.csv")
    assert isinstance(p, UPath) and is_remote(p)
    assert p.name == "manifest.csv" and display(p) == "memory://term/course-a/manifest.csv"


@pytest.mark.parametrize("url", ["s3://AKIAXXX:s3cr3tv4lue@bucket/x.csv", "s3://s3cr3tv4lue@bucket/x.csv"])
def test_a_url_with_credentials_is_refused_without_showing_them(url: str) -> None:
    with pytest.raises(StorageError) as caught:
        resolve(url)
    assert "s3cr3tv4lue" not in str(caught.value) and "AKIAXXX" not in str(caught.value)
    assert "must not carry credentials" in str(caught.value)
    assert "s3cr3tv4lue" not in display(url)


@pytest.mark.parametrize("url", ["http://example.test/x.csv", "ftp://h/x", "sftp://h/x"])
def test_an_unknown_scheme_is_refused(url: str) -> None:
    with pytest.raises(StorageError, match="unknown scheme"):
        resolve(url)


def test_a_bucket_is_required() -> None:
    with pytest.raises(StorageError, match="names its bucket"):
        resolve("s3:///x.csv")


def test_options_come_from_the_store_defaults_the_settings_and_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "DOCCHECK_STORAGE_OPTIONS", '{"anon": false, "s3": {"endpoint_url": "http://127.0.0.1:9", "key": "k"}}'
    )
    options = storage_options("s3", {"key": "explicit"})
    assert options["endpoint_url"] == "http://127.0.0.1:9" and options["key"] == "explicit"
    assert options["anon"] is False
    assert options["config_kwargs"]["retries"]["mode"] == "standard"  # the defaults survive a merge
    assert "endpoint_url" not in storage_options("gs")


def test_bad_storage_options_are_named_without_their_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from doccheck.config import load_settings

    monkeypatch.setenv("DOCCHECK_STORAGE_OPTIONS", '["secret-value"]')
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert "DOCCHECK_STORAGE_OPTIONS" in str(caught.value) and "secret-value" not in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("../other/x.txt", "outside the manifest's prefix"),
        ("a/../../x.txt", "outside the manifest's prefix"),
        ("/term/course-a/x.txt", "absolute path"),
        ("s3://other-bucket/x.txt", "s3:// URL"),
        ("http://127.0.0.1:1/x.txt", "http:// URL"),
        ("file:///etc/passwd", "file:// URL"),
        ("C:\\x.txt", "absolute path"),
    ],
)
def test_a_row_path_that_leaves_the_prefix_is_refused(raw: str, why: str) -> None:
    base = resolve("memory://term/course-a")
    with pytest.raises(OutsideLocation, match=why):
        child(base, raw)


def test_a_row_path_under_the_prefix(memory: MemoryFileSystem) -> None:
    base = resolve("memory://term/course-a")
    assert display(child(base, "docs/../essays/a.txt")) == "memory://term/course-a/essays/a.txt"


def test_a_local_row_path_keeps_the_folder_rule(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("x")
    (tmp_path / "in" / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert child(tmp_path / "in", "a.txt") == (tmp_path / "in" / "a.txt").resolve()
    with pytest.raises(OutsideLocation, match="symbolic link"):
        child(tmp_path / "in", "link.txt")
    with pytest.raises(OutsideLocation):
        child(tmp_path / "in", "../secret.txt")


def test_one_listing_answers_for_every_file_of_a_prefix(memory: MemoryFileSystem) -> None:
    memory.pipe({"/term/a/x.txt": b"12345", "/term/a/sub/y.txt": b"1", "/term/ab/z.txt": b"no"})
    base = resolve("memory://term/a")
    listing = Listing(base)
    calls: list[str] = []
    original = memory.find

    def counted(path: str, **kw: object) -> object:
        calls.append(path)
        return original(path, **kw)

    memory.find = counted  # type: ignore[method-assign]
    try:
        entry = listing.entry(base / "x.txt")
        assert entry is not None and entry.size == 5
        assert listing.entry(base / "sub" / "y.txt") is not None
        assert listing.entry(base / "missing.txt") is None
        assert listing.entry(base / "sub") is None  # a folder is not a file
        assert len(calls) == 1
    finally:
        del memory.find


def test_a_listing_made_ahead_is_the_one_the_rows_wait_for(memory: MemoryFileSystem) -> None:
    """list_ahead lists a store's prefix on a thread of its own; the first ask waits for that
    listing instead of making another (one LIST), and a failed one is made again by the ask,
    which meets the store's error itself. A local folder is not listed."""
    import threading

    memory.pipe({"/term/a/x.txt": b"12345"})
    base = resolve("memory://term/a")
    assert base.fs is memory  # kept by the path: the listing's thread uses it too (a store's is shared anyway)
    calls: list[str] = []
    started, release = threading.Event(), threading.Event()
    original = memory.find

    def slow(path: str, **kw: object) -> object:
        calls.append(path)
        started.set()
        release.wait(10)
        return original(path, **kw)

    memory.find = slow  # type: ignore[method-assign]
    try:
        listing = Listing(base)
        listing.list_ahead()
        assert started.wait(10)
        threading.Timer(0.2, release.set).start()
        entry = listing.entry(base / "x.txt")  # waits for the listing under way
        assert entry is not None and entry.size == 5 and len(calls) == 1
    finally:
        del memory.find

    def failing(path: str, **kw: object) -> object:
        calls.append(path)
        raise OSError("the store failed")

    calls.clear()
    memory.find = failing  # type: ignore[method-assign]
    try:
        listing = Listing(base)
        listing.list_ahead()
        with pytest.raises(OSError, match="the store failed"):
            listing.entry(base / "x.txt")
        assert len(calls) == 2  # the thread's, then the ask's own
    finally:
        del memory.find
    Listing(Path("/nonexistent")).list_ahead()  # a local folder: nothing listed, nothing raised


def test_a_local_listing_stats_on_demand(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"abc")
    listing = Listing(tmp_path)
    entry = listing.entry(tmp_path / "a.txt")
    assert entry is not None and entry.size == 3 and entry.identity.startswith("stat:3:")
    assert listing.entry(tmp_path / "none.txt") is None
    assert listing.entry(tmp_path) is None


def test_a_local_copy_is_bounded_and_removed(memory: MemoryFileSystem) -> None:
    memory.pipe({"/term/a/essay.docx": b"x" * 3000})
    remote = resolve("memory://term/a/essay.docx")
    with local_copy(remote, max_bytes=5000) as copy:
        assert copy.suffix == ".docx" and copy.read_bytes() == b"x" * 3000
        kept = copy
    assert not kept.exists()
    with pytest.raises(StorageError, match="over the 1000 byte limit"), local_copy(remote, max_bytes=1000):
        pass


def test_a_local_file_is_its_own_copy(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    with local_copy(tmp_path / "a.txt", max_bytes=1) as copy:
        assert copy == tmp_path / "a.txt"
    assert (tmp_path / "a.txt").exists()


def test_streamed_reads(memory: MemoryFileSystem) -> None:
    memory.pipe({"/t/big.bin": os.urandom(3 * 1024 * 1024 + 7)})
    with open_input(resolve("memory://t/big.bin")) as f:
        assert len(f.read()) == 3 * 1024 * 1024 + 7


@pytest.mark.parametrize("where", ["memory", "local"])
def test_a_failed_write_publishes_nothing(where: str, memory: MemoryFileSystem, tmp_path: Path) -> None:
    target = resolve("memory://out/r/documents.parquet") if where == "memory" else tmp_path / "r" / "documents.parquet"
    write_bytes(target, b"old")
    with pytest.raises(RuntimeError), open_output(target) as out:
        out.write(b"half")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"old"
    if where == "local":
        assert [p.name for p in target.parent.iterdir()] == ["documents.parquet"]


def test_a_tree_is_uploaded_with_its_marker_last(memory: MemoryFileSystem, tmp_path: Path) -> None:
    (tmp_path / "run" / "files").mkdir(parents=True)
    for name in ("run.json", "documents.parquet", "files/a.pdf", "report.html"):
        (tmp_path / "run" / name).write_bytes(name.encode())
    order: list[str] = []
    original = memory.put_file

    def recorded(lpath: str, rpath: str, **kw: object) -> object:
        order.append(rpath)
        return original(lpath, rpath, **kw)

    memory.put_file = recorded  # type: ignore[method-assign]
    try:
        assert upload_tree(tmp_path / "run", resolve("memory://out/run-1"), last=["run.json"]) == 4
    finally:
        del memory.put_file
    assert order[-1].endswith("run-1/run.json") and len(order) == 4
    assert resolve("memory://out/run-1/files/a.pdf").read_bytes() == b"files/a.pdf"
    assert remove_tree(resolve("memory://out/run-1")) and not remove_tree(resolve("memory://out/run-1"))


def test_store_errors_name_what_escapes_a_store_library() -> None:
    import aiohttp

    from doccheck.storage import store_errors

    errors = store_errors()
    assert OSError in errors and aiohttp.ClientError in errors
    assert issubclass(aiohttp.ClientPayloadError, errors)


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("s3://bucket/term/docs/a b.txt", {"anon": True}),
        ("s3://bucket/a%20b/c.txt", {"anon": True}),
        ("gs://bucket/x/y.docx", {}),
        ("az://container/x/y.pdf", {"account_name": "acct"}),
        ("abfs://container/x/y.pdf", {"account_name": "acct"}),
        ("memory://term/x/y.txt", {}),
    ],
)
def test_a_stores_url_and_name_are_what_upath_says_without_its_parsing(url: str, options: dict[str, object]) -> None:
    """display and file_name take the URL and the last part from the key (several calls a document
    of a term read from a bucket): the same text as UPath's own str() and name."""
    pytest.importorskip({"s3": "s3fs", "gs": "gcsfs", "az": "adlfs", "abfs": "adlfs"}.get(url.split(":")[0], "fsspec"))
    path = UPath(url, **options)
    expected = str(path) if path.protocol != "memory" else "memory://term/x/y.txt"
    assert display(path) == expected and file_name(path) == path.name
    assert file_name(Path("/tmp/x/report.pdf")) == "report.pdf"
