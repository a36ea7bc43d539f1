"""A document read whole from S3 goes through obstore (doccheck/storage/_object_reads.py): one GET
and no HEAD, the store's faults ridden out by its own retries, a missing or oversized object said
as the seam says it, no secret in a message; options it cannot translate fall back to s3fs."""

from __future__ import annotations

import pytest

from doccheck.errors import StorageError
from doccheck.storage import local_copy, read_bounded, resolve
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
