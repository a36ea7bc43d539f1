"""``submit_batch`` decisions for transient errors, the submit deadline and claims held
elsewhere, against the scripted client of tests/unit/pipeline/test_pipeline.py (real ledger)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from doccheck.client import ConflictError, NetworkError, RateLimitError, RetryPolicy, ServerError, ValidationError
from doccheck.ledger import Ledger
from doccheck.pipeline import SubmitOptions, submit_batch
from doccheck.pipeline.sending import _submitter as submit_module
from tests.factories import planned
from tests.fakes import FakeClient, docs, run

FAST = RetryPolicy(initial=0.01, max_backoff=0.05, max_retry_after=0.05)


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submit_module, "REQUEUE_POLICY", FAST)
    monkeypatch.setattr(submit_module, "ELSEWHERE_POLICY", FAST)


class FlakyClient(FakeClient):
    """Fails a document's first ``n`` sends with a given error, then answers normally."""

    def __init__(self) -> None:
        super().__init__()
        self.flaky: dict[str, list[Exception]] = {}

    def _create(self, key: str, products: Any, metadata: dict[str, Any]) -> Any:
        errors = self.flaky.get(metadata.get("document_id", ""))
        if errors:
            raise errors.pop(0)
        return super()._create(key, products, metadata)


def test_transient_errors_are_requeued_until_sent(ledger: Ledger) -> None:
    client, run_id = FlakyClient(), ledger.start_run(campaign="c1")
    client.flaky["d1"] = [RateLimitError("slow down", status_code=429, code="rate_limited", retry_after=0.01)] * 3
    client.flaky["d2"] = [ServerError("boom", status_code=503, code="service_unavailable")] * 2
    result = run(submit_batch(client, ledger, run_id, docs(3)))
    assert (result.submitted, result.failed, result.retry_later, result.requeued) == (3, 0, 0, 5)
    assert {r["status"] for r in ledger.report_rows(run_id=run_id)["submissions"]} == {"submitted"}


def test_refusal_is_final_and_not_requeued(ledger: Ledger) -> None:
    client, run_id = FlakyClient(), ledger.start_run(campaign="c1")
    client.flaky["d1"] = [ValidationError("bad", status_code=422, code="invalid_input")]
    result = run(submit_batch(client, ledger, run_id, docs(2)))
    assert (result.submitted, result.failed, result.requeued) == (1, 1, 0)
    assert ledger.doubt(docs(1)[0].idempotency_key) is None  # a refusal settles the key


def test_unsent_at_the_deadline_is_retry_later_and_a_rerun_finishes(ledger: Ledger) -> None:
    client, run_id = FlakyClient(), ledger.start_run(campaign="c1")
    client.flaky["d2"] = [ServerError("boom", status_code=500, code="internal_error")] * 1000
    result = run(submit_batch(client, ledger, run_id, docs(3), SubmitOptions(deadline_at=time.time() + 0.3)))
    assert (result.submitted, result.failed, result.retry_later, result.incomplete) == (2, 0, 1, 1)
    row = {r["document_id"]: r for r in ledger.report_rows(run_id=run_id)["submissions"]}["d2"]
    assert (row["status"], row["error_code"]) == ("retry_later", "internal_error")
    assert "submit deadline" in row["error_message"]
    client.flaky.clear()
    again = run(submit_batch(client, ledger, ledger.start_run(campaign="c1"), docs(3)))
    # d2's 500s may have reached the service: the rerun looks it up first, then sends it
    assert (again.already_done, again.submitted, again.incomplete) == (2, 1, 0)
    assert client.calls.count("list") >= 1 and len(client.checks) == 3


def test_key_held_by_another_live_process_is_not_sent(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    d1, d2 = docs(2)
    assert ledger.claim(d1.idempotency_key, "other-process")
    result = run(submit_batch(client, ledger, run_id, [d1, d2], SubmitOptions(deadline_at=time.time() + 0.3)))
    assert (result.submitted, result.in_flight_elsewhere, result.incomplete) == (1, 1, 1)
    assert len(client.checks) == 1  # d1 was never sent by this run
    row = ledger.submission_for_key(d1.idempotency_key)
    assert row is None  # and its row was not touched: the owner writes it


def test_key_finished_elsewhere_while_waiting_counts_as_done(ledger: Ledger) -> None:
    client, run_id = FakeClient(), ledger.start_run(campaign="c1")
    [d1] = docs(1)
    assert ledger.claim(d1.idempotency_key, "other-process")
    ledger.mark_submitting(d1.idempotency_key, campaign="c1", document_id="d1", products=d1.products, mode="text")
    ledger.mark_submitted(d1.idempotency_key, client._create(d1.idempotency_key, d1.products, {"document_id": "d1"}))
    result = run(submit_batch(client, ledger, run_id, [d1], SubmitOptions(deadline_at=time.time() + 5)))
    assert (result.already_done, result.submitted, result.in_flight_elsewhere) == (1, 0, 0)


class FlakyStorage(FakeClient):
    """The first PUT of each upload drops the connection; create-check needs the bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.put_done: set[str] = set()
        self.put_failures = 1

    async def put_upload(self, upload: Any, path: Any) -> None:
        self.calls.append("put_upload")
        if self.put_failures:
            self.put_failures -= 1
            raise NetworkError("connection reset during PUT")
        self.put_done.add(upload.upload_id)

    async def create_check(self, *, upload_id: str, idempotency_key: str, **kw: Any) -> Any:
        if idempotency_key not in self.by_key and upload_id in self.uploads and upload_id not in self.put_done:
            self.calls.append(f"create_check:{upload_id}")
            raise ConflictError("bytes never arrived", status_code=409, code="upload_incomplete")
        return await super().create_check(upload_id=upload_id, idempotency_key=idempotency_key, **kw)


def test_failed_put_is_retried_on_the_same_upload_not_a_new_slot(ledger: Ledger, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("word " * 1000)
    doc = planned("u1", mode="upload", path=big, text=None, size_bytes=big.stat().st_size)
    client, run_id = FlakyStorage(), ledger.start_run(campaign="c1")
    result = run(submit_batch(client, ledger, run_id, [doc]))
    assert (result.submitted, result.failed, result.requeued) == (1, 0, 1)
    assert client.calls.count("create_upload") == 1  # one waiting slot, used
    assert len(client.uploads) == 1 and client.put_done == client.uploads
