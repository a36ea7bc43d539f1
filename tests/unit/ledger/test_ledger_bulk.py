"""Grouped answers (``doccheck.ledger._bulk``) leave the ledger exactly as one-by-one writes do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from doccheck.client import Check
from doccheck.ledger import Ledger
from doccheck.ledger._bulk import (
    Answer,
    ClaimRequest,
    Prepare,
    record_answers,
    record_claims,
    record_prepares,
)
from doccheck.ledger._tables import MONEY_TABLES, ClaimRow, OutcomeRow, SubmissionRow
from doccheck.pipeline.sending._ledger_writer import GroupCommit, LedgerWriter
from tests.factories import check_json

OWNER = "host:1:owner"
VOLATILE = {"id", "created_at", "updated_at", "submitted_at", "expires_at", "first_sent_at", "completed_at"}


@pytest.fixture
def ledgers(tmp_path: Path) -> Iterator[tuple[Ledger, Ledger]]:
    one, grouped = Ledger(f"sqlite:///{tmp_path / 'one.db'}"), Ledger(f"sqlite:///{tmp_path / 'grouped.db'}")
    yield one, grouped
    one.close()
    grouped.close()


def _cases() -> list[tuple[str, dict[str, Any], str | None, str | None, bool]]:
    """(key, check json, mode, upload_id, marked submitting first)."""
    return [
        ("k-text", check_json("chk-1"), "text", None, True),
        ("k-both", check_json("chk-2", ("ai", "similarity")), "multipart", "upl-2", True),
        ("k-nomode", check_json("chk-3"), None, None, True),
        ("k-done", check_json("chk-4", ai={"status": "completed", "score": 0.5}), "text", None, True),  # slow path
        ("k-unmarked", check_json("chk-5"), "text", None, False),  # slow path: no submitting row
        ("k-other", check_json("chk-6"), "text", None, True),  # claim held by another owner: stays held
        ("k-known", check_json("chk-7"), "text", None, True),  # slow path: its check already has outcomes
    ]


def _prepare(ledger: Ledger) -> None:
    for key, _, mode, _, marked in _cases():
        owner = "host:2:other" if key == "k-other" else OWNER
        assert ledger.claim(key, owner)
        if marked:
            ledger.mark_submitting(key, campaign="c1", document_id=key, products=["ai"], mode=mode or "text")
            assert ledger.mark_sending(key, owner)
    with ledger.engine.begin() as conn:  # an earlier answer's outcome (an event, a poll) for chk-7
        conn.execute(OutcomeRow.__table__.insert(), {"check_id": "chk-7", "product": "ai", "campaign": "c1",
                                                    "status": "completed", "fetched": True, "score": 0.25})  # fmt: skip


def _snapshot(ledger: Ledger) -> dict[str, list[dict[str, Any]]]:
    out = {}
    with ledger.engine.connect() as conn:
        for table in (SubmissionRow.__table__, OutcomeRow.__table__, ClaimRow.__table__, *MONEY_TABLES):
            rows = [{k: v for k, v in r._mapping.items() if k not in VOLATILE} for r in conn.execute(select(table))]
            out[table.name] = sorted(rows, key=repr)
    return out


def test_grouped_answers_equal_one_by_one_writes(ledgers: tuple[Ledger, Ledger]) -> None:
    one, grouped = ledgers
    _prepare(one)
    _prepare(grouped)
    for key, data, mode, upload_id, _ in _cases():
        one.mark_submitted(key, Check.model_validate(data), mode=mode, upload_id=upload_id)
        one.release_claim(key, OWNER, settled=True)
    record_answers(
        grouped,
        [Answer(key, Check.model_validate(data), mode, upload_id, OWNER) for key, data, mode, upload_id, _ in _cases()],
    )
    expected, got = _snapshot(one), _snapshot(grouped)
    assert got == expected
    states = {r["idempotency_key"]: r["state"] for r in got["submissions"]}
    assert set(states.values()) == {"submitted"} and len(states) == 7
    holders = {r["idempotency_key"]: r["owner"] for r in got["submission_claims"]}
    assert holders["k-other"] == "host:2:other" and holders["k-text"] is None


@pytest.fixture
def fresh_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'l.db'}"


def test_recorder_groups_concurrent_answers_into_few_transactions(fresh_url: str) -> None:
    ledger = Ledger(fresh_url)
    keys = [f"k{i}" for i in range(40)]
    for key in keys:
        assert ledger.claim(key, OWNER)
        ledger.mark_submitting(key, campaign="c1", document_id=key, products=["ai"], mode="text")
    calls: list[int] = []
    writer = LedgerWriter()
    original = writer.call

    async def counting(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[1]))
        return await original(fn, *args, **kwargs)

    writer.call = counting  # type: ignore[method-assign]
    recorder = GroupCommit(ledger, writer, record_answers)

    async def main() -> None:
        await asyncio.gather(*(
            recorder.record(Answer(k, Check.model_validate(check_json(f"chk-{k}")), "text", None, OWNER)) for k in keys
        ))  # fmt: skip

    asyncio.run(main())
    writer.close()
    assert sum(calls) == 40 and len(calls) <= 3, calls
    assert {r.state for r in ledger.submissions_for_keys(keys).values()} == {"submitted"}
    assert ledger.claim_holders(keys) == {}
    ledger.close()


def test_grouped_prepares_equal_submitting_then_sending(ledgers: tuple[Ledger, Ledger]) -> None:
    one, grouped = ledgers
    items = [Prepare(f"p{i}", "c1", f"d{i}", ("ai",), "text", OWNER) for i in range(4)]
    items.append(Prepare("p-lost", "c1", "dl", ("ai",), "text", OWNER))  # claim held by another owner
    for led in ledgers:
        for p in items:
            assert led.claim(p.key, "host:2:other" if p.key == "p-lost" else OWNER)
        led.mark_submit_failed("p1", code="network_error", message="x", state="retry_later", campaign="c1",
                               document_id="d1", products=["ai"], mode="text")  # fmt: skip
    expected = []
    for p in items:
        one.mark_submitting(
            p.key, campaign=p.campaign, document_id=p.document_id, products=list(p.products), mode=p.mode
        )
        expected.append(one.mark_sending(p.key, p.owner))
    assert record_prepares(grouped, items) == expected == [True, True, True, True, False]
    assert _snapshot(grouped) == _snapshot(one)


def test_grouped_claims_equal_claim_then_read(ledgers: tuple[Ledger, Ledger]) -> None:
    one, grouped = ledgers
    for led in ledgers:
        assert led.claim("held", "host:2:other")  # a live other owner (not this host's dead pid)
        assert led.claim("mine", OWNER)
        led.mark_submitting("mine", campaign="c1", document_id="m", products=["ai"], mode="text")
    items = [ClaimRequest(k, OWNER, 120.0) for k in ("new", "mine", "held")]
    expected = [(one.claim(i.key, i.owner, i.lease_seconds), one.submission_for_key(i.key)) for i in items]
    got = record_claims(grouped, items)
    assert [w for w, _ in got] == [w for w, _ in expected] == [True, True, False]
    assert [(r.state if r else None) for _, r in got] == [(r.state if r else None) for _, r in expected]
    assert _snapshot(grouped) == _snapshot(one)


def test_grouped_charges_equal_record_charge(ledgers: tuple[Ledger, Ledger]) -> None:
    """The multi-row charges: a stated refund, a charge stored before the answer (an event
    or a poll came first: ``ON CONFLICT`` sends it to ``record_charge``), a campaign whose
    budget row exists and one whose row does not."""
    from doccheck.ledger._money import record_charge

    cases = [
        ("m-refund", "c1", check_json("chk-r", ("ai", "similarity"),
                                      cost={"ai_cents": 1, "similarity_cents": 2, "total_cents": 3,
                                            "refunded_cents": 2})),
        ("m-known", "c1", check_json("chk-k")),
        ("m-plain", "c2", check_json("chk-p")),
    ]  # fmt: skip
    for led in ledgers:
        with led.engine.begin() as conn:
            record_charge(conn, "chk-k", None, check_json("chk-k")["cost"])  # known, no campaign yet
            record_charge(conn, "chk-old", "c1", check_json("chk-old")["cost"])  # c1's budget row exists
        for key, campaign, _ in cases:
            assert led.claim(key, OWNER)
            led.mark_submitting(key, campaign=campaign, document_id=key, products=["ai"], mode="text")
            assert led.mark_sending(key, OWNER)
    one, grouped = ledgers
    for key, _, data in cases:
        one.mark_submitted(key, Check.model_validate(data), mode="text")
        one.release_claim(key, OWNER, settled=True)
    record_answers(grouped, [Answer(key, Check.model_validate(data), "text", None, OWNER) for key, _, data in cases])
    got = _snapshot(grouped)
    assert got == _snapshot(one)
    costs = {r["check_id"]: r for r in got["check_costs"]}
    assert costs["chk-r"]["refunded_cents"] == 2 and costs["chk-r"]["stated_refund_cents"] == 2
    assert costs["chk-k"]["campaign"] == "c1" and costs["chk-k"]["budget_counted"] is True
    spent = {r["campaign"]: r["spent_cents"] for r in got["campaign_budgets"]}
    assert spent == {"c1": 1 + 3 + 1, "c2": 1}


def test_claims_then_prepare_equal_claim_submitting_sending(ledgers: tuple[Ledger, Ledger]) -> None:
    """One transaction claims every key and prepares exactly the ones a one-by-one
    submitter would send at once: won, never recorded, and asked to."""
    from doccheck.ledger._bulk import record_claims_then_prepare

    def prep(key: str) -> Prepare:
        return Prepare(key, "c1", f"d-{key}", ("ai",), "text", OWNER)

    items = [
        ClaimRequest("new", OWNER, 120.0, prep("new")),
        ClaimRequest("new-2", OWNER, 120.0, prep("new-2")),
        ClaimRequest("plain", OWNER, 120.0),  # no prepare asked: claim only
        ClaimRequest("failed", OWNER, 120.0, prep("failed")),  # a row exists: the usual path
        ClaimRequest("held", OWNER, 120.0, prep("held")),  # another live owner: not won
        ClaimRequest("expired", OWNER, 120.0, prep("expired")),  # another owner's lease ran out
    ]
    for led in ledgers:
        assert led.claim("held", "host:2:other")
        assert led.claim("expired", "host:2:other", lease_seconds=-1)
        led.mark_submit_failed("failed", code="x", message="y", state="retry_later", campaign="c1",
                               document_id="d-failed", products=["ai"], mode="text")  # fmt: skip
    one, grouped = ledgers
    expected = []
    for it in items:
        won = one.claim(it.key, it.owner, it.lease_seconds)
        row = one.submission_for_key(it.key)
        ready = won and row is None and it.prepare is not None
        if ready:
            one.mark_submitting(it.key, campaign="c1", document_id=f"d-{it.key}", products=["ai"], mode="text")
            assert one.mark_sending(it.key, OWNER)
        expected.append((won, row.state if row else None, ready))
    got = record_claims_then_prepare(grouped, items)
    assert [(w, r.state if r else None, p) for w, r, p in got] == expected
    assert [p for _, _, p in got] == [True, True, False, False, False, True]
    assert _snapshot(grouped) == _snapshot(one)
    assert record_claims_then_prepare(grouped, []) == []


def test_answers_and_claims_in_one_transaction_equal_two(ledgers: tuple[Ledger, Ledger]) -> None:
    """One round (answers of the requests back + claims of the next documents) leaves the
    ledger as the two separate group commits do, and answers each item in its place."""
    from doccheck.ledger._bulk import record_answers_and_claims, record_claims_then_prepare

    done = [f"a{i}" for i in range(3)]
    for led in ledgers:
        for key in done:
            assert led.claim(key, OWNER)
            led.mark_submitting(key, campaign="c1", document_id=key, products=["ai"], mode="text")
            assert led.mark_sending(key, OWNER)
    answers = [Answer(k, Check.model_validate(check_json(f"chk-{k}")), "text", None, OWNER) for k in done]
    claims = [ClaimRequest(f"n{i}", OWNER, 120.0, Prepare(f"n{i}", "c1", f"n{i}", ("ai",), "text", OWNER))
              for i in range(3)]  # fmt: skip
    one, grouped = ledgers
    record_answers(one, answers)
    expected = record_claims_then_prepare(one, claims)
    mixed: list[Any] = [answers[0], claims[0], claims[1], answers[1], answers[2], claims[2]]
    got = record_answers_and_claims(grouped, mixed)
    assert got[0] is None and got[3] is None and got[4] is None
    assert [(w, p) for w, _, p in (got[1], got[2], got[5])] == [(w, p) for w, _, p in expected] == [(True, True)] * 3
    assert _snapshot(grouped) == _snapshot(one)


def test_grouped_documents_equal_ledger_record_documents(ledgers: tuple[Ledger, Ledger]) -> None:
    """``bulk.record_documents`` writes the rows ``Ledger.record_documents`` writes, and is
    idempotent per run (a rerun of the batch adds nothing)."""
    from doccheck.ledger._bulk import record_documents
    from doccheck.ledger._tables import DocumentRow
    from tests.factories import planned

    batch = [planned(f"d{i}", row=i) for i in range(1, 6)]
    batch[1] = planned("d2", row=2, products=("ai", "similarity"))
    one, grouped = ledgers
    runs = [led.start_run(campaign="c1", manifest="m.csv", products=["ai"]) for led in ledgers]
    assert one.record_documents(runs[0], batch) == 5
    assert record_documents(grouped, runs[1], "c1", batch) == 5
    assert record_documents(grouped, runs[1], "c1", batch) == 0

    def rows(led: Ledger) -> list[dict[str, Any]]:
        with led.engine.connect() as conn:
            found = [dict(r._mapping) for r in conn.execute(select(DocumentRow.__table__))]
        return sorted(({k: v for k, v in r.items() if k not in {"id", "run_id"}} for r in found), key=repr)

    assert rows(grouped) == rows(one) and len(rows(one)) == 5


def test_a_round_compiles_its_statements_once(tmp_path: Path) -> None:
    """From the second round on, every statement of a round (the ``ON CONFLICT`` upserts
    included, which SQLAlchemy 2.0 does not cache by itself) comes from the compiled cache."""
    from sqlalchemy import event
    from sqlalchemy.engine.interfaces import CacheStats

    from doccheck.ledger._bulk import record_answers_and_claims

    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    hits: list[tuple[str, Any]] = []

    @event.listens_for(ledger.engine, "after_cursor_execute")
    def seen(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        if context is not None and context.compiled is not None:
            hits.append((statement.split()[0], context.cache_hit))

    def round_of(n: int, prefix: str) -> None:
        claims = [ClaimRequest(f"{prefix}{i}", OWNER, 120.0, Prepare(f"{prefix}{i}", "c1", f"{prefix}{i}", ("ai",),
                                                                     "text", OWNER)) for i in range(n)]  # fmt: skip
        assert all(p for _, _, p in record_answers_and_claims(ledger, claims))  # type: ignore[arg-type]
        answers = [Answer(f"{prefix}{i}", Check.model_validate(check_json(f"chk-{prefix}{i}")), "text", None, OWNER)
                   for i in range(n)]  # fmt: skip
        record_answers_and_claims(ledger, answers)  # type: ignore[arg-type]

    round_of(3, "a")
    hits.clear()
    round_of(3, "b")
    assert {kind for kind, _ in hits} >= {"INSERT", "UPDATE", "SELECT"}
    assert [h for h in hits if h[1] != CacheStats.CACHE_HIT] == []
    ledger.close()
