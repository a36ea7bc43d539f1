"""The storage seam against the tests' S3 server: its own options ride out the store's faults,
its listing is one LIST, its writes publish whole objects, and no credential reaches a message."""

from __future__ import annotations

import pytest

from doccheck.errors import StorageError
from doccheck.storage import Listing, display, open_input, resolve, write_bytes
from tests.fixtures.s3 import S3Bucket

pytestmark = pytest.mark.integration


def test_reads_and_writes_ride_out_slow_downs_and_drops_with_the_seams_options(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe({f"{b.name}/term/docs/{i}.txt": f"essay {i}".encode() for i in range(12)})
    b.proxy.set_faults(slow_down_share=0.2, drop_share=0.1, seed=3)
    base = resolve(f"{b.url}/term")
    listing = Listing(base)
    for i in range(12):
        path = base / "docs" / f"{i}.txt"
        entry = listing.entry(path)
        assert entry is not None and entry.etag
        with open_input(path) as f:
            assert f.read() == f"essay {i}".encode()
    write_bytes(base / "out" / "r.json", b"{}")
    assert b.fs.cat_file(f"{b.name}/term/out/r.json") == b"{}"
    answered = [r for r in b.proxy.lists(b.name) if r.fault is None]
    assert len(answered) == 1  # one listing (its faulted attempts retried) answered every file
    assert b.proxy.faulted(), "the proxy injected no fault: the test proves nothing"


def test_a_url_with_credentials_names_no_secret(s3_bucket: S3Bucket) -> None:
    url = f"s3://AKIAEXAMPLE:{s3_bucket.env['AWS_SECRET_ACCESS_KEY']}@{s3_bucket.name}/m.csv"
    with pytest.raises(StorageError) as caught:
        resolve(url)
    assert s3_bucket.env["AWS_SECRET_ACCESS_KEY"] not in str(caught.value) + display(url)
    assert s3_bucket.proxy.requests == []
