"""The tests' S3 (moto in server mode) and the fault-injecting proxy in front of it.

What the storage seam's tests rely on: s3fs finds the proxy through ``AWS_ENDPOINT_URL``
alone, the proxy's faults look to a client like a real store's (S3's XML errors, connections
cut mid-body and mid-upload), they are ridden out by the retry configuration the seam uses
(``RETRIES``), and the log counts what reached the store.
"""

from __future__ import annotations

import time

import fsspec
import httpx
import pytest
import s3fs
from upath import UPath

from tests.fixtures.s3 import S3Bucket

pytestmark = pytest.mark.integration

# What the storage seam passes to s3fs (``config_kwargs``, botocore's ``Config``): up to 10
# retries (11 attempts) of a request that failed with a 5xx, a throttle or a dropped
# connection, "standard" backoff (random, doubling from 1 s, at most 20 s).
RETRIES = {"retries": {"max_attempts": 10, "mode": "standard"}}


def test_s3fs_writes_and_reads_through_the_proxy_from_the_environment_alone(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe({f"{b.name}/docs/a.txt": b"alpha", f"{b.name}/docs/b.txt": b"beta"})
    assert b.proxy.requests == []  # the setup went to moto directly

    fs = s3fs.S3FileSystem(skip_instance_cache=True)  # no endpoint: AWS_ENDPOINT_URL names the proxy
    assert fs.s3.meta.endpoint_url == b.proxy.url
    assert fs.cat_file(f"{b.name}/docs/a.txt") == b"alpha"
    fs.pipe_file(f"{b.name}/reports/r.txt", b"report")
    assert b.fs.cat_file(f"{b.name}/reports/r.txt") == b"report"  # it reached moto
    assert (UPath(f"{b.url}/docs") / "b.txt").read_bytes() == b"beta"  # fsspec's own instance: same endpoint
    assert fsspec.url_to_fs(b.url)[0].s3.meta.endpoint_url == b.proxy.url

    logged = {(r.method, r.path, r.status) for r in b.proxy.requests}
    assert ("GET", f"{b.name}/docs/a.txt", 200) in logged and ("PUT", f"{b.name}/reports/r.txt", 200) in logged


def test_the_log_counts_gets_heads_and_lists_under_a_prefix(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe({f"{b.name}/docs/{i}.txt": b"x" for i in range(3)} | {f"{b.name}/other.txt": b"y"})
    fs = b.through_proxy()
    assert sorted(fs.ls(f"{b.name}/docs")) == [f"{b.name}/docs/{i}.txt" for i in range(3)]
    assert fs.cat([f"{b.name}/docs/{i}.txt" for i in range(3)] + [f"{b.name}/other.txt"])
    fs.info(f"{b.name}/docs/0.txt", refresh=True)

    # cat asks each object's size first: from the listing for the listed ones, a HEAD for the other
    gets = b.proxy.gets_of(f"s3://{b.name}/docs/")
    assert sorted(r.method for r in gets) == ["GET"] * 3 + ["HEAD"], gets
    assert [r.method for r in b.proxy.gets_of(f"{b.name}/other")] == ["HEAD", "GET"]
    [listing] = b.proxy.lists(b.name)
    assert listing.query["prefix"] == "docs/" and listing.status == 200
    assert b.proxy.puts_of(b.name) == [] and b.proxy.faulted() == []


def test_faults_answer_as_s3_does_and_only_where_selected(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    for path, data in ((f"{b.name}/docs/a.txt", b"a" * 1000), (f"{b.name}/other.txt", b"o")):
        b.fs.pipe_file(path, data, ACL="public-read")  # read below by a client that does not sign
    with httpx.Client(base_url=b.proxy.url, trust_env=False) as http:
        b.proxy.set_faults(slow_down_share=1.0, methods={"get"}, prefix=f"{b.name}/docs/")
        slow = http.get(f"/{b.name}/docs/a.txt")
        assert slow.status_code == 503 and slow.headers["content-type"] == "application/xml"
        assert "<Code>SlowDown</Code><Message>Please reduce your request rate.</Message>" in slow.text
        assert http.get(f"/{b.name}/other.txt").text == "o"  # another prefix
        assert http.head(f"/{b.name}/docs/a.txt").status_code == 200  # another method

        b.proxy.set_faults(slow_down_share=0.0, error_500_share=1.0)
        failed = http.get(f"/{b.name}/docs/a.txt")
        assert failed.status_code == 500 and "<Code>InternalError</Code>" in failed.text

        b.proxy.set_faults(error_500_share=0.0, drop_share=1.0, methods={"GET", "PUT"})
        with pytest.raises(httpx.RemoteProtocolError):  # forwarded, the answer cut mid-body
            http.get(f"/{b.name}/docs/a.txt")
        with pytest.raises(httpx.RemoteProtocolError):  # cut mid-upload, never forwarded
            http.put(f"/{b.name}/docs/new.txt", content=b"n" * 100_000)
    assert not b.fs.exists(f"{b.name}/docs/new.txt")
    assert [(r.method, r.key, r.status, r.fault) for r in b.proxy.faulted()] == [
        ("GET", "docs/a.txt", 503, "slow_down"),
        ("GET", "docs/a.txt", 500, "error_500"),
        ("GET", "docs/a.txt", None, "drop"),
        ("PUT", "docs/new.txt", None, "drop"),
    ]


def test_reads_and_writes_ride_out_throttling_and_dropped_connections(s3_bucket: S3Bucket) -> None:
    """20% of the requests answered 503 SlowDown and 10% dropped (GETs mid-body, PUTs mid-upload,
    HEADs unanswered): every read returns its document and every write lands, with ``RETRIES``."""
    b = s3_bucket
    docs = {f"{b.name}/docs/{i:02}.txt": b"document %d " % i * 200 for i in range(16)}
    b.fs.pipe(docs)
    fs = b.through_proxy(config_kwargs=RETRIES)
    b.proxy.set_faults(slow_down_share=0.2, drop_share=0.1, seed=1)

    assert fs.cat(list(docs)) == docs  # a HEAD and a GET each, concurrently
    reports = {path.replace("/docs/", "/reports/"): data for path, data in list(docs.items())[:6]}
    fs.pipe(reports)

    assert b.fs.cat(list(reports)) == reports
    log = b.proxy.requests
    kinds = [r.fault for r in log]
    assert kinds.count("slow_down") > 0 and kinds.count("drop") > 0
    assert kinds.count(None) == 2 * len(docs) + len(reports)  # each request succeeded once, after its retries
    faulted_reads = [r for r in log if r.fault and r.path.startswith(f"{b.name}/docs/")]
    assert len(b.proxy.gets_of(f"{b.name}/docs/")) == 2 * len(docs) + len(faulted_reads)


def test_who_retries_what(s3_bucket: S3Bucket) -> None:
    """botocore retries every failed request (``max_attempts`` retries); s3fs retries again on top
    (``S3FileSystem.retries``, 5) a throttle whose message says so and a dropped connection,
    never a HEAD's bare 503 (it has no body to say SlowDown) nor a 500 InternalError."""
    b = s3_bucket
    b.fs.pipe(f"{b.name}/a.txt", b"a" * 1000)
    fs = b.through_proxy(config_kwargs={"retries": {"max_attempts": 1, "mode": "standard"}})
    fs.retries = 2

    b.proxy.set_faults(slow_down_share=1.0, methods={"HEAD"})
    with pytest.raises(OSError, match="Service Unavailable"):
        fs.info(f"{b.name}/a.txt")
    assert len(b.proxy.gets_of(b.name)) == 2  # botocore's 2 attempts, no more

    b.proxy.reset()
    b.proxy.set_faults(slow_down_share=1.0, methods={"GET"})
    with pytest.raises(OSError, match="reduce your request rate"):
        fs.cat_file(f"{b.name}/a.txt")
    assert [r.method for r in b.proxy.gets_of(b.name)] == ["HEAD"] + ["GET"] * 4  # 2 attempts x 2 of s3fs's


def test_latency_is_added_to_every_request(s3_bucket: S3Bucket) -> None:
    b = s3_bucket
    b.fs.pipe(f"{b.name}/a.txt", b"a")
    fs = b.through_proxy()
    b.proxy.set_faults(latency_ms=100, methods={"PUT"})  # the methods select faults, not the latency
    started = time.monotonic()
    for _ in range(3):
        fs.info(f"{b.name}/a.txt", refresh=True)
    assert time.monotonic() - started >= 3 * 0.100
    assert len(b.proxy.gets_of(b.name)) == 3
