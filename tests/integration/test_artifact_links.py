"""``DOCCHECK_ARTIFACT_LINKS=presigned`` against the tests' S3 server and Prefect server: the
artifacts of a run whose reports are in the bucket carry presigned links, their expiry written
beside them, that open the objects with a plain HTTP GET (no credential of the reader's), and
never the secret key. With the default (``object``) they name the object's URL.
"""

from __future__ import annotations

import asyncio
import io
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from doccheck.storage import share_link
from tests.fixtures.s3 import ACCESS_KEY_ID, S3Bucket

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

PAGE = b"<!doctype html><title>report</title><p>every document</p>"


def _run_folder(bucket: S3Bucket) -> tuple[str, bytes]:
    """A run folder in the bucket with report.html and a submissions.parquet; the folder's URL."""
    buffer = io.BytesIO()
    pq.write_table(pa.table({"document_id": ["d1", "d2"], "status": ["submitted"] * 2, "cost_cents": [1, 2]}), buffer)
    folder = f"{bucket.name}/reports/links-run"
    bucket.fs.pipe({f"{folder}/report.html": PAGE, f"{folder}/submissions.parquet": buffer.getvalue()})
    return f"s3://{folder}", buffer.getvalue()


def _get(url: str) -> bytes:
    """The URL fetched as a browser would: no credential, no proxy from the environment."""
    answer = httpx.get(url, trust_env=False, timeout=30)
    answer.raise_for_status()
    return answer.content


def _artifacts(*ids: Any) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterId

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(id=ArtifactFilterId(any_=list(ids))))
    by_id = {a.id: a for a in found}
    return [by_id[i] for i in ids]


def test_a_presigned_link_opens_the_object_until_it_expires(s3_bucket: S3Bucket) -> None:
    folder, _ = _run_folder(s3_bucket)
    before = datetime.now(UTC).replace(microsecond=0)
    link = share_link(f"{folder}/report.html", presign_seconds=600)
    assert link.presigned and link.expires_at is not None
    assert before + timedelta(seconds=600) <= link.expires_at <= datetime.now(UTC) + timedelta(seconds=600)
    assert link.url.startswith(s3_bucket.endpoint_url) and _get(link.url) == PAGE
    query = parse_qs(urlsplit(link.url).query)
    assert query["X-Amz-Expires"] == ["600"] and query["X-Amz-Credential"][0].startswith(ACCESS_KEY_ID)
    assert s3_bucket.secret_access_key not in link.url  # a signature, never the secret key
    assert share_link(f"{folder}/report.html").url == f"{folder}/report.html"  # the object's URL, no expiry


def test_run_artifacts_carry_presigned_links_with_their_expiry(
    prefect_server: Any, s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect import flow

    from prefect_doccheck.tasks import publish_report_link, publish_run_artifacts

    folder, parquet = _run_folder(s3_bucket)
    monkeypatch.setenv("DOCCHECK_ARTIFACT_LINKS", "presigned")
    monkeypatch.setenv("DOCCHECK_ARTIFACT_LINK_EXPIRY_S", "3600")

    @flow(name="artifact-links-test")
    async def publish() -> tuple[Any, Any]:  # what bulk_check does at its end, for a bucket's run folder
        created = await publish_run_artifacts({"campaign": "links", "status": "finished", "report_dir": folder})
        return await publish_report_link(f"{folder}/report.html", "links"), created["summary"]

    report, summary = _artifacts(*asyncio.run(publish()))
    (url,) = re.findall(r"\(([^)]+)\)", str(report.data))
    assert _get(url) == PAGE
    assert re.search(r"presigned link to the object in the bucket, valid until \d{4}-\d\d-\d\d \d\d:\d\d UTC",
                     str(report.description))  # fmt: skip
    markdown = str(summary.data)
    found = dict(re.findall(r"\[([^\]]+)\]\(<([^>]+)>\) \(presigned link, valid until [^)]+ UTC\)", markdown))
    assert _get(found["submissions"]) == parquet
    for data in (markdown, str(report.data), str(report.description)):
        assert s3_bucket.secret_access_key not in data and "/tmp/" not in data
