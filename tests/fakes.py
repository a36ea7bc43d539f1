"""A scripted in-memory stand-in for the service client, for unit tests of ``doccheck.pipeline``.

It answers like the service (one check per key, replays, charges per new check, uploads,
the list of checks) without HTTP, so the pipeline's decisions can be tested in
milliseconds. The same paths run against the real emulator in the integration suite.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from doccheck.client import Check, CheckList, NotFoundError, Submission, Upload, Webhook
from tests.factories import check_json, planned

__all__ = ["FakeClient", "docs", "run"]


class FakeClient:
    """Answers like the service: one check per key (replays), charges per new check."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.by_key: dict[str, Check] = {}
        self.checks: dict[str, dict[str, Any]] = {}
        self.fail: dict[str, Exception] = {}  # document_id -> error to raise
        self.ids = itertools.count(1)
        self.uploads: set[str] = set()
        self.webhook_url: str | None = "https://receiver.example/webhook"  # None: no account webhook

    async def get_webhook(self) -> Webhook:
        if self.webhook_url is None:
            raise NotFoundError("no webhook endpoint", status_code=404, code="not_found")
        return Webhook(url=self.webhook_url)

    def _create(self, key: str, products: Any, metadata: dict[str, Any]) -> Check:
        if key in self.by_key:
            return self.by_key[key].model_copy(update={"replayed": True})
        doc_id = metadata.get("document_id", "")
        if doc_id in self.fail:
            raise self.fail[doc_id]
        cid = f"chk-{next(self.ids)}"
        self.checks[cid] = check_json(cid, tuple(products), metadata=metadata)
        check = Check.model_validate(self.checks[cid])
        self.by_key[key] = check
        return check

    async def submit(
        self, document: Any, *, products: Any, idempotency_key: str, metadata: Any, **_: Any
    ) -> Submission:
        self.calls.append("submit")
        return Submission(self._create(idempotency_key, products, metadata), "text")

    async def create_upload(self, filename: str, **_: Any) -> Upload:
        self.calls.append("create_upload")
        uid = f"up-{next(self.ids)}"
        self.uploads.add(uid)
        return Upload(upload_id=uid, upload_url="http://storage/x", content_type="text/plain")

    async def put_upload(self, upload: Upload, path: Any) -> None:
        self.calls.append("put_upload")

    async def create_check(
        self, *, upload_id: str, products: Any, idempotency_key: str, metadata: Any, **_: Any
    ) -> Check:
        self.calls.append(f"create_check:{upload_id}")
        if idempotency_key not in self.by_key and upload_id not in self.uploads:
            raise NotFoundError("gone", status_code=404, code="upload_not_found")
        return self._create(idempotency_key, products, metadata)

    async def get_check(self, check_id: str) -> Check:
        self.calls.append(f"get:{check_id}")
        return Check.model_validate(self.checks[check_id])

    async def list_checks(self, limit: int | None = None, starting_after: str | None = None) -> CheckList:
        self.calls.append("list")
        ids = list(self.checks)[::-1]
        if starting_after:
            ids = ids[ids.index(starting_after) + 1 :]
        page = ids[: limit or 10]
        return CheckList(data=[Check.model_validate(self.checks[i]) for i in page], has_more=len(ids) > len(page))

    def finish(self, check_id: str) -> None:
        data = self.checks[check_id]
        data["status"] = "completed"
        data["completed_at"] = "2026-01-01T00:05:00Z"
        if data.get("ai"):
            data["ai"] = {"status": "completed", "score": 0.2, "label": "human"}
        if data.get("similarity"):
            data["similarity"] = {"status": "completed", "score": 5.0, "matched_words": 3, "sources": []}


def docs(n: int, **kw: Any) -> list[Any]:
    return [planned(f"d{i}", row=i, **kw) for i in range(1, n + 1)]


def run(coro: Any) -> Any:
    return asyncio.run(coro)
