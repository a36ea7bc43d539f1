"""``submit_batch`` with the ledger work outside the request slots (issue 10): the
``concurrency`` requests at once still hold, and each request leaves only after its key's
claim, ``submitting`` row and ``sending`` mark are committed (docs/ledger.md's order)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import create_engine, select

from doccheck.ledger import ClaimRow, Ledger, SubmissionRow
from doccheck.pipeline import SubmitOptions, submit_batch
from tests.fakes import FakeClient, docs, run


class WatchingClient(FakeClient):
    """Counts requests in flight and, as each one leaves, reads the key's rows through a
    separate connection (what another process, or the resume after a crash, would see)."""

    def __init__(self, database_url: str) -> None:
        super().__init__()
        self.in_flight = 0
        self.most = 0
        self.seen: dict[str, tuple[str | None, bool | None, str | None]] = {}
        self.engine = create_engine(database_url)

    async def submit(self, document: Any, *, idempotency_key: str, **kw: Any) -> Any:
        s, c = SubmissionRow.__table__, ClaimRow.__table__
        with self.engine.connect() as conn:
            state = conn.execute(select(s.c.state).where(s.c.idempotency_key == idempotency_key)).scalar()
            claim = conn.execute(select(c.c.in_doubt, c.c.owner).where(c.c.idempotency_key == idempotency_key)).first()
        self.seen[idempotency_key] = (state, claim.in_doubt if claim else None, claim.owner if claim else None)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            return await super().submit(document, idempotency_key=idempotency_key, **kw)
        finally:
            self.in_flight -= 1


def test_requests_in_flight_stay_within_concurrency_and_leave_after_their_commit(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(url)
    client, run_id = WatchingClient(url), ledger.start_run(campaign="c1")
    batch = docs(24)
    result = run(submit_batch(client, ledger, run_id, batch, SubmitOptions(concurrency=3)))
    assert result.submitted == 24 and client.calls.count("submit") == 24
    assert client.most == 3  # the slots are used, never exceeded
    for doc in batch:
        state, in_doubt, owner = client.seen[doc.idempotency_key]
        assert (state, in_doubt) == ("submitting", True), doc.document_id  # committed before the request
        assert owner is not None
    rows = ledger.submissions_for_keys(d.idempotency_key for d in batch)
    assert {r.state for r in rows.values()} == {"submitted"}
    assert ledger.claim_holders(d.idempotency_key for d in batch) == {}
    client.engine.dispose()
    ledger.close()


class SlowClient(FakeClient):
    """Every request takes 10 ms, so several are in flight while the ledger's rounds gather."""

    async def submit(self, document: Any, **kw: Any) -> Any:
        await asyncio.sleep(0.01)
        return await super().submit(document, **kw)


def rounds_of(monkeypatch: Any) -> list[int]:
    """Sizes (answers + claims) of the batch's ledger rounds, as committed."""
    from doccheck import ledger as ledger_surface

    sizes: list[int] = []
    original = ledger_surface.record_answers_and_claims

    def counted(ledger: Ledger, items: list[Any]) -> list[Any]:
        sizes.append(len(items))
        return original(ledger, items)

    monkeypatch.setattr(ledger_surface, "record_answers_and_claims", counted)
    return sizes


def test_rounds_gather_while_requests_travel(tmp_path: Any, monkeypatch: Any) -> None:
    """At concurrency 8, a round waits (bounded) for 16 writes while requests are in flight:
    ~8 documents a commit instead of one or two, and every document is still recorded."""
    sizes = rounds_of(monkeypatch)
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    run_id = ledger.start_run(campaign="c1")
    result = run(submit_batch(SlowClient(), ledger, run_id, docs(96), SubmitOptions(concurrency=8)))
    assert result.submitted == 96
    assert sum(sizes) == 2 * 96  # one claim and one answer a document
    assert sum(sizes) / len(sizes) >= 12, sizes  # the target is 16; the tail and the start are smaller
    assert {r.state for r in ledger.submissions_for_keys(d.idempotency_key for d in docs(96)).values()} == {"submitted"}
    ledger.close()


def test_concurrency_one_commits_each_write_alone(tmp_path: Any, monkeypatch: Any) -> None:
    """Concurrency 1 keeps one document at a time: no round waits for writes that cannot come."""
    sizes = rounds_of(monkeypatch)
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    run_id = ledger.start_run(campaign="c1")
    result = run(submit_batch(SlowClient(), ledger, run_id, docs(6), SubmitOptions(concurrency=1)))
    assert result.submitted == 6
    assert sizes == [1] * 12
    ledger.close()


class FreezeWatchingClient(FakeClient):
    """Notes the garbage collector's frozen count while each request is made."""

    def __init__(self) -> None:
        super().__init__()
        self.frozen: list[int] = []

    async def submit(self, document: Any, **kw: Any) -> Any:
        import gc

        self.frozen.append(gc.get_freeze_count())
        return await super().submit(document, **kw)


def test_a_batch_freezes_older_objects_for_its_duration_only(tmp_path: Any) -> None:
    """Full collections skip the objects older than the batch while it runs; afterwards they
    are collectable again, and a program's own freeze is left alone."""
    import gc

    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    client = FreezeWatchingClient()
    assert gc.get_freeze_count() == 0
    run(submit_batch(client, ledger, ledger.start_run(campaign="c1"), docs(5), SubmitOptions(concurrency=2)))
    assert min(client.frozen) > 0
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        run(
            submit_batch(
                FreezeWatchingClient(), ledger, ledger.start_run(campaign="c2"), docs(3), SubmitOptions(concurrency=2)
            )
        )
        assert gc.get_freeze_count() > 0  # not unfrozen by the batch
    finally:
        gc.unfreeze()
    ledger.close()
