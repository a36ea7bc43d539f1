"""A file on S3 is read through obstore (doccheck/storage/_object_reads.py, _s3_store.py): a
document whole in one GET and no HEAD, a manifest streamed in ranged GETs, a prefix listed, the
store's faults ridden out by its own retries, a missing or oversized object said as the seam says
it, no secret in a message; options it cannot translate, and a listing cut mid-answer, go to s3fs.
Reading a term from S3 loads nothing of s3fs or botocore."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from doccheck.errors import StorageError
from doccheck.storage import Listing, describe, local_copy, open_input, read_bounded, resolve
from tests.fixtures.s3 import S3Bucket

pytestmark = pytest.mark.integration


def test_a_document_is_one_get_and_no_head(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe({f"{b.name}/docs/{i}.txt": f"essay {i} ".encode() * 50 for i in range(5)})
    b.proxy.clear_log()
    for i in range(5):
        path = resolve(f"{b.url}/docs/{i}.txt")
        assert read_bounded(path, max_bytes=10_000, size=len(f"essay {i} ") * 50) == f"essay {i} ".encode() * 50
    assert sorted(r.method for r in b.proxy.requests) == ["GET"] * 5
    with local_copy(resolve(f"{b.url}/docs/0.txt"), max_bytes=10_000) as copy:
        assert copy.read_bytes() == b"essay 0 " * 50


def test_faults_are_ridden_out_by_the_stores_own_retries(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe({f"{b.name}/docs/{i}.txt": f"essay {i}".encode() for i in range(20)})
    b.proxy.set_faults(slow_down_share=0.2, error_500_share=0.1, drop_share=0.1, seed=5)
    for i in range(20):
        assert read_bounded(resolve(f"{b.url}/docs/{i}.txt"), max_bytes=100) == f"essay {i}".encode()
    assert b.proxy.faulted(), "the proxy injected no fault: the test proves nothing"


def test_missing_oversized_and_refused_reads_say_which_file_and_no_secret(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe({f"{b.name}/docs/big.txt": b"x" * 5000})
    missing = resolve(f"{b.url}/docs/gone.txt")
    with pytest.raises(FileNotFoundError) as gone:
        read_bounded(missing, max_bytes=100)
    assert "docs/gone.txt" in str(gone.value)
    b.proxy.clear_log()
    with pytest.raises(StorageError, match="over the 100 byte limit"):
        read_bounded(resolve(f"{b.url}/docs/big.txt"), max_bytes=100)  # size unknown: from the answer
    with pytest.raises(StorageError, match="over the 100 byte limit"):
        read_bounded(resolve(f"{b.url}/docs/big.txt"), max_bytes=100, size=5000)  # size known: no request
    assert len(b.proxy.requests) == 1
    b.proxy.set_faults(error_500_share=1.0)
    with pytest.raises(StorageError) as failed:
        read_bounded(resolve(f"{b.url}/docs/big.txt"), max_bytes=10_000)
    text = str(failed.value)
    assert "docs/big.txt" in text and "the store failed" in text
    assert b.env["AWS_SECRET_ACCESS_KEY"] not in text and b.proxy.url not in text


def test_options_it_cannot_translate_are_read_through_s3fs(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    import obstore

    b = s3_bucket
    b.fs.pipe({f"{b.name}/docs/a.txt": b"essay"})
    gets: list[str] = []
    real_get = obstore.get
    monkeypatch.setattr(obstore, "get", lambda store, key, **kw: gets.append(key) or real_get(store, key, **kw))
    assert read_bounded(resolve(f"{b.url}/docs/a.txt"), max_bytes=100, size=5) == b"essay"
    assert gets == ["docs/a.txt"]
    monkeypatch.setenv("DOCCHECK_STORAGE_OPTIONS", '{"s3": {"requester_pays": false}}')
    assert read_bounded(resolve(f"{b.url}/docs/a.txt"), max_bytes=100, size=5) == b"essay"
    assert gets == ["docs/a.txt"]  # s3fs read it: obstore was not asked
    # SigV4, the default options' signature (presigned links need it said), is what obstore signs with;
    # SigV2, which it does not, goes to s3fs
    monkeypatch.setenv("DOCCHECK_STORAGE_OPTIONS", '{"s3": {"config_kwargs": {"signature_version": "s3"}}}')
    assert read_bounded(resolve(f"{b.url}/docs/a.txt"), max_bytes=100, size=5) == b"essay"
    assert gets == ["docs/a.txt"]


def test_a_streamed_read_is_ranged_gets_of_a_block_each(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    data = b"".join(f"line {i:06d}\n".encode() for i in range(25_000))  # 300,000 bytes: 5 blocks of 64 KiB
    b.fs.pipe({f"{b.name}/term/manifest.csv": data})
    manifest = resolve(f"{b.url}/term/manifest.csv")
    b.proxy.clear_log()
    with open_input(manifest, block_bytes=64 * 1024) as f:
        assert f.readline(5) == b"line "  # a line's limit holds, as on a local file
        assert f.readline() == b"000000\n"
        f.seek(-12, io.SEEK_END)
        assert f.read() == b"line 024999\n" and f.tell() == len(data)
        f.seek(0)
        assert b"".join(f) == data
    methods = [r.method for r in b.proxy.requests]
    assert methods[0] == "HEAD" and methods.count("HEAD") == 1  # the size, asked once
    assert methods.count("GET") == 1 + 1 + 4  # the first block, the tail, the 4 blocks after the first
    b.proxy.clear_log()
    with open_input(manifest, size=len(data), block_bytes=64 * 1024) as f:
        # A text reader asks 8 KiB at a time past the buffer (read1): still a block a GET.
        assert sum(1 for _ in io.TextIOWrapper(f, encoding="utf-8")) == 25_000
    assert [r.method for r in b.proxy.requests] == ["GET"] * 5


def test_a_listing_cut_mid_answer_is_listed_again_through_s3fs(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe({f"{b.name}/term/docs/{i}.txt": b"essay" for i in range(30)})
    # Seed 1 draws 0.13 then 0.85: the first LIST's answer is cut mid-body (object_store gives up
    # on it), the second, s3fs', is answered.
    b.proxy.set_faults(drop_share=0.5, seed=1, methods={"GET"})
    listing = Listing(resolve(f"{b.url}/term"))
    assert [name for name, _ in listing.files()] == sorted(f"docs/{i}.txt" for i in range(30))
    assert [r.fault for r in b.proxy.lists(b.name)] == ["drop", None]


def test_a_term_is_read_from_s3_without_loading_s3fs_or_botocore(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe(
        {f"{b.name}/term/manifest.csv": b"student_id,path\ns1,docs/a.txt\n", f"{b.name}/term/docs/a.txt": b"essay"}
    )
    script = (
        "import sys\n"
        "from doccheck.storage import Listing, describe, open_input, read_bounded, resolve\n"
        "manifest, doc = resolve(sys.argv[1] + '/term/manifest.csv'), resolve(sys.argv[1] + '/term/docs/a.txt')\n"
        "size = describe(manifest).size\n"
        "with open_input(manifest, size=size) as f:\n"
        "    rows = f.read().decode().split()\n"
        "entry = Listing(resolve(sys.argv[1] + '/term')).entry(doc)\n"
        "text = read_bounded(doc, max_bytes=100, size=entry.size).decode()\n"
        "loaded = sorted(m for m in ('s3fs', 'aiobotocore', 'botocore', 'aiohttp') if m in sys.modules)\n"
        "print(rows, entry.size, text, loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, b.url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['student_id,path', 's1,docs/a.txt'] 5 essay []"
    assert sorted(r.method for r in b.proxy.requests) == ["GET", "GET", "GET", "HEAD"]  # GET, LIST, GET


def test_a_missing_manifest_is_none_and_a_failing_store_names_the_file(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    assert describe(resolve(f"{b.url}/term/manifest.csv")) is None
    b.proxy.set_faults(error_500_share=1.0)
    with pytest.raises(StorageError) as failed:
        describe(resolve(f"{b.url}/term/manifest.csv"))
    assert "term/manifest.csv" in str(failed.value) and b.env["AWS_SECRET_ACCESS_KEY"] not in str(failed.value)


def test_a_folders_marker_is_not_listed_as_a_file_and_an_empty_file_is(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe({f"{b.name}/term/docs/": b"", f"{b.name}/term/docs/a.txt": b"essay", f"{b.name}/term/none/": b"",
               f"{b.name}/term/empty.txt": b""})  # fmt: skip
    base = resolve(f"{b.url}/term")
    listing = Listing(base)
    assert [(name, entry.size) for name, entry in listing.files()] == [("docs/a.txt", 5), ("empty.txt", 0)]
    assert listing.entry(resolve(f"{b.url}/term/docs")) is None  # a folder, not an empty file
    assert listing.entry(resolve(f"{b.url}/term/none")) is None
    assert len(b.proxy.lists(b.name)) == 1  # one listing, and a HEAD for each of the three empty objects
    assert sorted(r.method for r in b.proxy.requests if not r.is_list) == ["HEAD"] * 3


def test_keys_object_store_cannot_name_are_listed_through_s3fs(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    for key in ("term/a.txt", "term/odd//b.txt", "term/./c.txt"):  # an empty segment, a "." one
        b.fs.call_s3("put_object", Bucket=b.name, Key=key, Body=b"essay")
    listing = Listing(resolve(f"{b.url}/term"))
    assert [name for name, _ in listing.files()] == ["./c.txt", "a.txt", "odd//b.txt"]
    assert [r.fault for r in b.proxy.lists(b.name)] == [None, None]  # obstore's, refused whole; then s3fs'
