"""Claims on keys in flight (``doccheck.ledger._claims``) and the no-downgrade rule, on SQLite.

tests/integration/test_claims_postgres.py re-runs every test here on PostgreSQL.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doccheck.ledger import Ledger

KEYS = [f"dc1-race-{i:03d}" for i in range(40)]


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(f"sqlite:///{tmp_path / 'claims.db'}")
    yield led
    led.close()


def test_second_owner_is_refused_until_release(ledger: Ledger) -> None:
    assert ledger.claim("k1", "a")
    assert ledger.claim("k1", "a")  # re-entrant for the holder
    assert not ledger.claim("k1", "b")
    assert ledger.claim_holders(["k1", "k2"]) == {"k1": "a"}
    ledger.release_claim("k1", "b")  # not b's to release
    assert not ledger.claim("k1", "b")
    ledger.release_claim("k1", "a")
    assert ledger.claim("k1", "b")


def test_dead_owner_lease_expires_and_renewal_keeps_it(ledger: Ledger) -> None:
    assert ledger.claim("k1", "dead", lease_seconds=0.2)
    assert ledger.claim("k2", "alive", lease_seconds=0.2)
    time.sleep(0.1)
    assert ledger.renew_claims(["k2"], "alive", lease_seconds=60) == 1
    time.sleep(0.25)
    assert ledger.claim("k1", "next")  # the dead owner's claim expired
    assert not ledger.claim("k2", "next")  # the renewed one did not
    assert ledger.renew_claims(["k1"], "dead") == 0  # a lost claim is reported as such


def test_send_in_doubt_until_settled(ledger: Ledger) -> None:
    assert ledger.doubt("k1") is None
    assert ledger.claim("k1", "a")
    assert ledger.mark_sending("k1", "a")
    first = ledger.doubt("k1")
    assert first is not None and first.sent_by == "a" and first.first_sent_at is not None
    ledger.release_claim("k1", "a")
    assert not ledger.mark_sending("k1", "b")  # no send without the claim
    assert ledger.claim("k1", "b") and ledger.mark_sending("k1", "b")
    again = ledger.doubt("k1")
    assert again is not None and again.first_sent_at == first.first_sent_at and again.sent_by == "b"
    ledger.settle("k1")
    assert ledger.doubt("k1") is None


def test_legacy_submitting_row_is_in_doubt(ledger: Ledger) -> None:
    ledger.mark_submitting("k1", campaign="c", document_id="d1", products=["ai"], mode="text")
    doubt = ledger.doubt("k1")
    assert doubt is not None and doubt.sent_by is None and doubt.first_sent_at is not None


def _check(check_id: str) -> dict[str, object]:
    return {"id": check_id, "status": "processing", "products": ["ai"], "words": 100,
            "cost": {"total_cents": 1}, "ai": {"status": "processing"}}  # fmt: skip


def test_submitted_is_never_moved_back(ledger: Ledger) -> None:
    ledger.mark_submitting("k1", campaign="c", document_id="d1", products=["ai"], mode="text")
    ledger.mark_submitted("k1", _check("chk-1"))
    ledger.mark_submitting("k1", campaign="c", document_id="d1", products=["ai"], mode="text")
    ledger.mark_upload_created("k1", "up-2")
    ledger.mark_submit_failed("k1", code="service_unavailable", message="x")
    ledger.mark_submit_failed("k1", code="retry", message="x", state="retry_later")
    row = ledger.submission_for_key("k1")
    assert row is not None and (row.state, row.check_id, row.error_code) == ("submitted", "chk-1", None)
    assert row.upload_id is None
    ledger.mark_submit_failed("k2", code="rate_limited", message="x", state="retry_later", campaign="c",
                              document_id="d2", products=["ai"])  # fmt: skip
    row2 = ledger.submission_for_key("k2")
    assert row2 is not None and (row2.state, row2.campaign, row2.document_id) == ("retry_later", "c", "d2")


def _race(database_url: str, owner: str, start: Any, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    led = Ledger(database_url)
    start.wait(timeout=60)  # every process has its engine open: all four claim at the same moment
    won = [k for k in KEYS if led.claim(k, owner)]
    led.close()
    out.put((owner, won))


def test_claims_race_between_processes_has_one_winner_per_key(ledger: Ledger) -> None:
    """Four real processes claim the same keys at the same moment: each key has one owner."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = ctx.Barrier(4)
    procs = [ctx.Process(target=_race, args=(ledger.database_url, f"p{i}", start, out)) for i in range(4)]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    winners: dict[str, list[str]] = {}
    for owner, won in results.items():
        for key in won:
            winners.setdefault(key, []).append(owner)
    assert sorted(winners) == sorted(KEYS)
    assert all(len(owners) == 1 for owners in winners.values()), winners
    assert ledger.claim_holders(KEYS) == {k: owners[0] for k, owners in winners.items()}


def test_claim_of_a_dead_process_on_this_host_is_taken_over_at_once(ledger: Ledger) -> None:
    import subprocess
    import sys

    from doccheck.ledger._claims import new_owner_id

    child = subprocess.run(
        [sys.executable, "-c", "from doccheck.ledger._claims import new_owner_id; print(new_owner_id())"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    dead = child.stdout.strip()  # that process has exited
    assert ledger.claim("k1", dead, lease_seconds=3600)
    assert ledger.claim("k1", new_owner_id())  # no need to wait an hour
    live = new_owner_id()  # this very process: alive
    assert ledger.claim("k2", live, lease_seconds=3600)
    assert not ledger.claim("k2", "elsewhere:1:abc")
    assert not ledger.claim("k2", new_owner_id())
