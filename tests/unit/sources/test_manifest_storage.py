"""A manifest at a URL and the documents its rows name, on fsspec's memory filesystem (issue 48).

The manifest and its documents exist only in the "bucket": every format (CSV, JSONL, Parquet),
every kind of document (text, DOCX, PDF), rows refused for leaving the prefix with nothing
fetched for them, a file gone between the listing and the read, and a store that fails, each the
row's rejection and never the read's failure.
"""

from __future__ import annotations

import hashlib
import io
import json
import socket
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from botocore.exceptions import BotoCoreError
from fsspec.implementations.memory import MemoryFileSystem

from doccheck.sources.manifest import ManifestError, RejectCode, iter_manifest, manifest_listing, read_manifest
from doccheck.storage import display, resolve
from tests.fixtures.memory_bucket import Requests
from tests.generated_documents import pdf_text
from tests.hostile_documents import docx_package, para

Bucket = tuple[MemoryFileSystem, Requests]

TEXT = b"one two three four five six"
DOCX = docx_package(para("alpha beta gamma delta epsilon"))
PDF = pdf_text(["the quick brown fox jumps over the lazy dog"])
FILES = {"docs/a.txt": TEXT, "docs/b.docx": DOCX, "docs/c.pdf": PDF}
ROWS = [
    {"document_id": "a", "path": "docs/a.txt"},
    {"document_id": "b", "path": "docs/b.docx"},
    {"document_id": "c", "path": "docs/sub/../c.pdf"},
    {"document_id": "t", "text": "an inline essay of seven words"},
]


def _manifest_bytes(fmt: str, rows: list[dict[str, str]]) -> bytes:
    if fmt == "csv":
        lines = ["document_id,path,text"] + [
            f"{r['document_id']},{r.get('path', '')},{r.get('text', '')}" for r in rows
        ]
        return ("\n".join(lines) + "\n").encode()
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in rows).encode()
    table = pa.table({k: [r.get(k) for r in rows] for k in ("document_id", "path", "text")})
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def _put(fs: MemoryFileSystem, fmt: str, rows: list[dict[str, str]], files: dict[str, bytes] = FILES) -> str:
    fs.pipe({f"/term/course-a/{name}": data for name, data in files.items()})
    fs.pipe({f"/term/course-a/manifest.{fmt}": _manifest_bytes(fmt, rows)})
    return f"memory://term/course-a/manifest.{fmt}"


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_a_bucket_manifest_and_its_documents(bucket: Bucket, fmt: str) -> None:
    fs, requests = bucket
    url = _put(fs, fmt, ROWS)
    result = read_manifest(url)
    assert result.rejections == []
    assert display(result.source) == url
    docs = {d.document_id: d for d in result.documents}
    assert [display(docs[k].path) for k in "abc"] == [  # type: ignore[arg-type]
        "memory://term/course-a/docs/a.txt",
        "memory://term/course-a/docs/b.docx",
        "memory://term/course-a/docs/c.pdf",
    ]
    assert (docs["a"].words, docs["b"].words, docs["c"].words, docs["t"].words) == (6, 5, 9, 6)
    assert (docs["a"].read_as, docs["b"].read_as, docs["c"].read_as) == (".txt", ".docx", ".pdf")
    for key, name in zip("abc", FILES, strict=True):
        assert docs[key].content_hash == hashlib.sha256(FILES[name]).hexdigest()
        assert docs[key].size_bytes == len(FILES[name])
    # one LIST of the prefix for every row's file; each document fetched once, nothing asked of it else
    assert sum(requests.lists.values()) == 1
    assert requests.documents_read() == {f"/term/course-a/{name}": 1 for name in FILES}
    assert not any(path.startswith("/term/course-a/docs") for path in requests.heads)


def test_the_campaign_of_a_bucket_manifest_is_its_name(bucket: Bucket) -> None:
    from doccheck.pipeline import RunOptions

    url = _put(bucket[0], "csv", ROWS)
    assert RunOptions.from_flat(manifest=url).source.campaign_name == "manifest"
    assert RunOptions.from_flat(manifest=url).source.manifest == url


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("../other/x.txt", "outside the manifest's prefix"),
        ("docs/../../other/x.txt", "outside the manifest's prefix"),
        ("memory://other-bucket/x.txt", "memory:// URL"),
        ("s3://other-bucket/x.txt", "s3:// URL"),
        ("/term/other/x.txt", "absolute path"),
        ("http://127.0.0.1:9/x.txt", "http:// URL"),
        ("https://example.test/x.txt", "https:// URL"),
        ("file:///etc/passwd", "file:// URL"),
    ],
)
def test_a_row_that_leaves_the_prefix_is_refused_and_nothing_is_fetched(
    bucket: Bucket, monkeypatch: pytest.MonkeyPatch, raw: str, why: str
) -> None:
    fs, requests = bucket
    fs.pipe({"/term/other/x.txt": b"words outside the prefix", "/other-bucket/x.txt": b"another bucket's words"})
    url = _put(fs, "csv", [{"document_id": "x", "path": raw}, ROWS[0]])

    def no_connection(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a connection was made for {raw!r}")

    monkeypatch.setattr(socket.socket, "connect", no_connection)
    result = read_manifest(url)
    (rejection,) = result.rejections
    assert rejection.code == RejectCode.PATH_ESCAPES_MANIFEST_DIR and rejection.document_id == "x"
    assert raw in rejection.reason and why in rejection.reason
    assert [d.document_id for d in result.documents] == ["a"]
    assert "/term/other/x.txt" not in requests.gets and "/other-bucket/x.txt" not in requests.gets


def test_rows_answered_from_the_listing_fetch_nothing(bucket: Bucket) -> None:
    fs, requests = bucket
    files = {"docs/empty.txt": b"", "docs/a.txt": TEXT, "docs/notes.xyz": b"what type is this"}
    url = _put(fs, "csv", [{"document_id": "e", "path": "docs/empty.txt"}, {"document_id": "m", "path": "docs/missing.txt"},
                           {"document_id": "u", "path": "docs/notes.xyz"}, {"document_id": "a", "path": "docs/a.txt"}],
               files)  # fmt: skip
    result = read_manifest(url)
    assert {r.document_id: r.code for r in result.rejections} == {
        "e": RejectCode.EMPTY_DOCUMENT,
        "m": RejectCode.FILE_NOT_FOUND,
        "u": RejectCode.UNSUPPORTED_TYPE,
    }
    assert requests.documents_read() == {"/term/course-a/docs/a.txt": 1}


def test_a_file_over_the_size_limit_is_refused_from_the_listing(
    bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    import doccheck.sources.manifest._files as files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 10)
    fs, requests = bucket
    url = _put(fs, "csv", ROWS[:1])
    (rejection,) = read_manifest(url).rejections
    assert rejection.code == RejectCode.FILE_TOO_LARGE and requests.documents_read() == {}


def test_a_document_deleted_between_the_listing_and_the_read_is_its_row_rejected(bucket: Bucket) -> None:
    fs, requests = bucket
    url = _put(fs, "csv", ROWS)
    listing = manifest_listing(url)
    assert listing.entry(resolve("memory://term/course-a/docs/b.docx")) is not None  # listed
    fs.rm("/term/course-a/docs/b.docx")
    outcomes = {o.document_id: o for o in iter_manifest(url, listing=listing)}
    gone = outcomes["b"]
    assert getattr(gone, "code", None) == RejectCode.FILE_NOT_FOUND
    assert "docs/b.docx" in gone.reason and "listed" in gone.reason  # type: ignore[union-attr]
    assert {k for k, o in outcomes.items() if not hasattr(o, "code")} == {"a", "c", "t"}
    assert sum(requests.lists.values()) == 1


class FakeStoreError(BotoCoreError):
    """What a store's library raises after its retries (botocore's errors are not OSErrors)."""

    fmt = "SlowDown: Please reduce your request rate. endpoint={endpoint_url}"


def test_a_store_error_after_the_retries_is_the_rows_rejection(bucket: Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    fs, _ = bucket
    url = _put(fs, "csv", ROWS)
    opened = MemoryFileSystem._open

    def failing(fs_: MemoryFileSystem, path: str, mode: str = "rb", *args: object, **kwargs: object) -> object:
        if path.endswith("b.docx") and "r" in mode:
            raise FakeStoreError(endpoint_url="http://secret-endpoint")
        return opened(fs_, path, mode, *args, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "_open", failing)
    result = read_manifest(url)
    (rejection,) = result.rejections
    assert rejection.code == RejectCode.UNREADABLE_FILE and rejection.document_id == "b"
    assert "FakeStoreError" in rejection.reason and "secret-endpoint" not in rejection.reason
    assert sorted(d.document_id for d in result.documents) == ["a", "c", "t"]


def test_an_unreadable_bucket_manifest_is_one_error(bucket: Bucket) -> None:
    with pytest.raises(ManifestError, match="does not exist"):
        read_manifest("memory://term/course-a/none.csv")
    with pytest.raises(ManifestError) as caught:
        read_manifest("s3://AKIAEXAMPLE:s3cr3tv4lue@term/course-a/manifest.csv")
    assert "s3cr3tv4lue" not in str(caught.value) and "must not carry credentials" in str(caught.value)


def test_a_bucket_manifest_read_from_a_row_on(bucket: Bucket) -> None:
    """A batch re-read seeks to its first row (CSV/JSONL byte offsets) in the bucket's object."""
    from doccheck.sources.manifest import RowCursor, RowStart

    fs, _ = bucket
    for fmt in ("csv", "jsonl", "parquet"):
        url = _put(fs, fmt, ROWS)
        cursor = RowCursor()
        starts = {}
        for outcome in iter_manifest(url, cursor=cursor):
            starts[outcome.row_number] = RowStart(
                row=outcome.row_number, offset=cursor.offset or 0, line=cursor.line or 1
            )
        again = list(iter_manifest(url, start=starts[3]))
        assert [o.document_id for o in again] == ["c", "t"], fmt


def test_a_local_manifest_hashes_its_files_every_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the disk nothing changes: a rerun hashes every file again (its identity, size, mtime and
    inode, can stay the same across a rewrite), and keeps nothing in ``listed_files``."""
    from contextlib import closing

    import doccheck.sources.manifest._files as checked
    from doccheck.ledger import Ledger, ListedFileRow
    from doccheck.pipeline import record_plan

    (tmp_path / "a.txt").write_text("one two three")
    (tmp_path / "m.csv").write_text("document_id,path\na,a.txt\n")
    hashed: list[str] = []
    real = checked._hash_and_extract
    monkeypatch.setattr(checked, "_hash_and_extract", lambda p, **k: hashed.append(p.name) or real(p, **k))
    with closing(Ledger(f"sqlite:///{tmp_path / 'l.db'}")) as ledger:
        record_plan(ledger, tmp_path / "m.csv")
        record_plan(ledger, tmp_path / "m.csv")
        with ledger.session() as s:
            assert s.query(ListedFileRow).count() == 0
    assert hashed == ["a.txt", "a.txt"]
