"""Absence of evidence is not evidence (issue 22): a key in doubt is resent only when a
lookup positively rules out its check, whatever the service chose for its list."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from doccheck.client import Check, CheckList, NotFoundError, ServiceProfile, ValidationError
from doccheck.ledger import Ledger
from doccheck.pipeline import submit_batch
from doccheck.pipeline.sending._reconcile import Reconciler, reference_for
from tests.fakes import FakeClient, docs, run

T0 = datetime(2026, 3, 1, tzinfo=UTC)


class ListingService:
    """A ``GET /checks`` as another service might serve it."""

    def __init__(
        self,
        refs: list[str | None],
        *,
        metadata: bool = True,
        newest_first: bool = True,
        honour_cursor: bool = True,
        max_limit: int = 100,
        missing: bool = False,
    ) -> None:
        # refs[0] is the newest check; one minute apart
        self.checks = [
            {"id": f"chk-{i}", "status": "processing", "created_at": (T0 - timedelta(minutes=i)).isoformat()}
            | ({"metadata": {"doccheck_ref": r} if r else {}} if metadata else {})
            for i, r in enumerate(refs)
        ]
        if not newest_first:
            self.checks.reverse()
        self.honour_cursor, self.max_limit, self.missing = honour_cursor, max_limit, missing
        self.requests = 0

    async def list_checks(self, limit: int | None = None, starting_after: str | None = None) -> CheckList:
        self.requests += 1
        if self.missing:
            raise NotFoundError("Not Found", status_code=404, code="http_404")
        if (limit or 10) > self.max_limit:
            raise ValidationError("limit too large", status_code=400, code="bad_limit")
        ids = [c["id"] for c in self.checks]
        start = ids.index(starting_after) + 1 if starting_after and self.honour_cursor else 0
        page = self.checks[start : start + (limit or 10)]
        return CheckList(data=[Check.model_validate(c) for c in page], has_more=start + len(page) < len(ids))


def find(service: ListingService, key: str, since: datetime | None, **kw: Any) -> Any:
    return asyncio.run(Reconciler(service, page_size=kw.pop("page_size", 5), **kw).find(key, since))


def test_a_complete_newest_first_walk_with_metadata_rules_out() -> None:
    service = ListingService([reference_for(f"k{i}") for i in range(30)])
    assert find(service, "k17", None).check.id == "chk-17"
    service.requests = 0
    found = find(service, "never-sent", T0 - timedelta(minutes=5))
    assert found.ruled_out and service.requests == 6  # no check known newer than the attempt: read to the end
    service.requests = 0

    async def ours(ids: list[str]) -> dict[str, datetime]:  # the ledger sent chk-0 11 minutes after
        return {"chk-0": T0 + timedelta(minutes=6)} if "chk-0" in ids else {}

    found = find(service, "never-sent", T0 - timedelta(minutes=5), known_sends=ours)
    assert found.ruled_out and not found.in_doubt
    assert service.requests == 4  # order proven by chk-0: stopped past the first attempt less the margin


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"metadata": False}, "metadata"),
        ({"honour_cursor": False}, "cursor"),
        ({"missing": True}, "no list"),
    ],
)
def test_a_list_that_cannot_prove_absence_leaves_the_key_in_doubt(kw: dict[str, Any], why: str) -> None:
    service = ListingService([None] * 40, **kw)
    found = find(service, "lost-answer", T0 - timedelta(days=3))
    assert found.in_doubt and why in found.reason
    assert service.requests <= 3  # stops at once: no endless walk


def test_the_profile_alone_can_say_no_list_no_metadata_unknown_order() -> None:
    service = ListingService([None] * 3)
    for prof in (ServiceProfile(list_checks=False), ServiceProfile(list_metadata=False),
                 ServiceProfile(list_order="unknown")):  # fmt: skip
        assert find(service, "k", None, profile=prof).in_doubt
    assert service.requests == 0


class HistoryFirst(ListingService):
    """Issue 39: a list served oldest first whose first pages are the account's older history
    (checks other tools made two days before, in one second), then ours, oldest first."""

    def __init__(self, history: int, refs: list[str | None]) -> None:
        super().__init__(refs, newest_first=False)
        older = (T0 - timedelta(days=2)).isoformat()
        self.checks = [
            {"id": f"other-{i}", "status": "completed", "created_at": older, "metadata": {}} for i in range(history)
        ] + self.checks


def test_a_first_page_of_older_history_proves_nothing() -> None:
    refs = [reference_for(f"k{i}") for i in range(12)]
    since = T0 - timedelta(minutes=30)  # the doubtful first attempt, after the history

    async def ours(ids: list[str]) -> dict[str, datetime]:
        return {i: T0 for i in ids if i.startswith("chk-")}

    service = HistoryFirst(10, refs)
    assert find(service, "k3", since, known_sends=ours).check.id == "chk-3"  # on the third page
    service.requests = 0
    found = find(service, "never-sent", since, known_sends=ours)
    assert found.ruled_out and service.requests == 5  # read to the end: the end proves it
    found = find(HistoryFirst(10, refs), "never-sent", since, max_pages=2, known_sends=ours)
    assert found.in_doubt and "2 pages" in found.reason  # never "not there" from older checks alone


def test_a_list_in_no_order_proves_nothing() -> None:
    service = ListingService([None] * 12)
    service.checks = service.checks[6:] + service.checks[:6]  # down, then up, then down again
    found = find(service, "k", T0 - timedelta(days=3))
    assert found.in_doubt and "no order" in found.reason


@pytest.mark.parametrize(
    ("profile", "why"),
    [(ServiceProfile(list_checks=False), "the service has no list of checks"),
     (ServiceProfile(list_metadata=False), "the service's list of checks does not carry metadata")],
)  # fmt: skip
def test_the_reason_a_profile_cannot_prove_absence_is_what_the_run_says(profile: ServiceProfile, why: str) -> None:
    """The mismatch a resume names beside ``doccheck resolve`` (``no-list`` is
    tests/integration/test_service_profiles_money.py's blind case)."""
    found = find(ListingService([None] * 3), "k", None, profile=profile)
    assert found.in_doubt and why in found.reason


def test_a_small_page_limit_is_adapted_to_and_walks_are_capped() -> None:
    service = ListingService([None] * 50, max_limit=20)
    assert find(service, "k", None, page_size=100).ruled_out  # 100 → 50 → 25 → 12, then walks to the end
    long = ListingService([None] * 50)
    found = find(long, "k", None, page_size=10, max_pages=2)
    assert found.in_doubt and "2 pages" in found.reason
    late = ListingService([None] * 50)
    assert find(late, "k", None, deadline_at=0.0).in_doubt and late.requests == 0


class NoMetadataClient(FakeClient):
    async def list_checks(self, limit: int | None = None, starting_after: str | None = None) -> CheckList:
        page = await super().list_checks(limit, starting_after)
        return CheckList(
            data=[Check.model_validate(c.model_dump(exclude={"metadata"})) for c in page.data], has_more=page.has_more
        )


def test_a_key_in_doubt_is_not_resent_and_the_run_says_so(tmp_path: Path) -> None:
    """The resume after a crash against a list without metadata: before, the document was
    billed twice; now it stays ``in_doubt`` with the next step, and nothing is sent."""
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    client, run_id = NoMetadataClient(), ledger.start_run(campaign="c1")
    [doc] = docs(1)
    ledger.record_documents(run_id, [doc])
    ledger.mark_submitting(doc.idempotency_key, campaign="c1", document_id="d1", products=doc.products, mode="text")
    assert ledger.claim(doc.idempotency_key, "crashed-owner")
    assert ledger.mark_sending(doc.idempotency_key, "crashed-owner")
    client._create(doc.idempotency_key, doc.products, {"doccheck_ref": reference_for(doc.idempotency_key)})
    ledger.release_claim(doc.idempotency_key, "crashed-owner")
    for _ in range(2):  # every rerun looks again, and never sends on absence of evidence
        result = run(submit_batch(client, ledger, ledger.start_run(campaign="c1"), [doc]))
        assert (result.in_doubt, result.submitted, result.incomplete) == (1, 0, 1)
        assert "submit" not in client.calls and len(client.checks) == 1
    row = ledger.submission_for_key(doc.idempotency_key)
    assert row.state == "in_doubt" and "doccheck resolve --campaign c1" in (row.error_message or "")
    ledger.close()


def test_resolve_lists_then_settles_documents_in_doubt(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from doccheck.cli import app

    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = Ledger(url)
    [doc] = docs(1)
    ledger.record_documents(ledger.start_run(campaign="c1"), [doc])
    ledger.mark_submitting(doc.idempotency_key, campaign="c1", document_id="d1", products=doc.products, mode="text")
    assert ledger.claim(doc.idempotency_key, "o") and ledger.mark_sending(doc.idempotency_key, "o")
    ledger.release_claim(doc.idempotency_key, "o")
    ledger.mark_submit_failed(doc.idempotency_key, code="in_doubt", message="?", state="in_doubt")
    runner = CliRunner()
    listed = runner.invoke(app, ["resolve", "--campaign", "c1", "--database-url", url], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and "d1" in listed.output and reference_for(doc.idempotency_key) in listed.output
    assert ledger.submission_for_key(doc.idempotency_key).state == "in_doubt"  # listing changes nothing
    done = runner.invoke(app, ["resolve", "--campaign", "c1", "--database-url", url, "--confirm-not-created"])
    assert done.exit_code == 0, done.output
    assert ledger.submission_for_key(doc.idempotency_key).state == "failed"
    assert ledger.doubt(doc.idempotency_key) is None
    client = FakeClient()
    result = run(submit_batch(client, ledger, ledger.start_run(campaign="c1"), [doc]))
    assert result.submitted == 1 and "list" not in client.calls  # the doubt is settled: sent, not looked up
    ledger.close()


class RefusesReuse(FakeClient):
    """A lost 502 after the check was made, then a service that refuses the key's reuse (409)."""

    def __init__(self) -> None:
        super().__init__()
        self.sends = 0

    async def submit(self, document: Any, *, products: Any, idempotency_key: str, metadata: Any, **kw: Any) -> Any:
        from doccheck.client import ConflictError, ServerError

        self.sends += 1
        self.calls.append("submit")
        if idempotency_key in self.by_key:
            raise ConflictError("key already used", status_code=409, code="idempotency_key_reused")
        self._create(idempotency_key, products, metadata)
        raise ServerError("bad gateway", status_code=502, code="http_502")


def test_a_refused_replay_after_a_lost_answer_is_looked_up_not_final(tmp_path: Path) -> None:
    """Before: the document was reported ``failed``, no check id, 0 cents, for a billed check."""
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    client = RefusesReuse()
    [doc] = docs(1)
    result = run(submit_batch(client, ledger, ledger.start_run(campaign="c1"), [doc]))
    assert (result.failed, result.reconciled, result.submitted) == (0, 1, 0) and client.sends == 2
    row = ledger.submission_for_key(doc.idempotency_key)
    assert row.state == "submitted" and row.check_id == "chk-1" and len(client.checks) == 1
    ledger.close()


def test_polls_that_fail_are_named_once_per_kind(caplog: pytest.LogCaptureFixture) -> None:
    """Before: 246 polls of 6 checks answered 404 and the run said "pending", naming nothing."""
    import logging

    from doccheck.pipeline.collecting._results import _warn_poll_errors

    warned: set[str] = set()
    with caplog.at_level(logging.WARNING, logger="doccheck.pipeline.collecting._results"):
        for _ in range(3):
            _warn_poll_errors({f"chk-{i}": "not_found: no such endpoint" for i in range(6)}, warned)
    [record] = caplog.records
    assert "6 checks" in record.getMessage() and "GET /checks/{id}" in record.getMessage()


def test_no_retrieve_path_in_the_profile_means_no_polls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from doccheck.pipeline import poll_pending

    profile = tmp_path / "service-profile.json"
    profile.write_text(json.dumps({"get_by_id": False}))
    monkeypatch.setenv("DOCCHECK_SERVICE_PROFILE", str(profile))
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    client = FakeClient()
    run(submit_batch(client, ledger, ledger.start_run(campaign="c1"), docs(2)))
    result = run(poll_pending(client, ledger, campaign="c1"))
    assert result.polled == 0 and "get" not in " ".join(client.calls)
    ledger.close()
