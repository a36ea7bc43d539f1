"""What a resume after a crash adopts, resends and charges, under every service profile (issue 42).

The decision the money matrix of issue 22 proved with real processes, at the level that owns it:
given what the ledger holds after a run died with requests in flight, and what the service
lists two days later (past the key retention: a resend bills again), the resume

- leaves a recorded answer alone (no request at all),
- adopts a check the list shows for a key whose answer was lost (the same check id, no charge),
- resends a key the list rules out (its request never reached the service),
- keeps in doubt, never resends, every lost key a list cannot prove (no list, no metadata,
  a list longer than a page that is served oldest first or ignores its cursor),
- sends what was never sent,

so each document is charged once, and what the ledger says it cost is what the service charged.

The service is the emulator's own ASGI app in this process (``create_app(emulator, profile)``):
each profile is the very rewriting the emulator serves over sockets, without a socket, a
subprocess or a clock that moves by itself. One crash state, every profile the API answers
as, in milliseconds each. The same resume with a real ``SIGKILL``, two overlapping processes
and both backends is ``tests/integration/test_service_profiles_money.py`` (one case per kind of
ledger write); the reading of each list shape in isolation is ``test_reconcile_profiles.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from doccheck.client import AsyncDocCheckClient, RetryPolicy
from doccheck.emulator import Emulator, EmulatorConfig, create_app
from doccheck.ledger import Ledger, total_money
from doccheck.pipeline import SubmitOptions, poll_pending, submit_batch
from doccheck.pipeline.sending._reconcile import reference_for, with_reference
from tests.factories import planned

KEY = "sk_unit_resume"
DAY = 86400
#: Profiles whose list proves nothing about a lost key: it stays in doubt, never resent.
BLIND = {"no-list", "list-no-metadata"}
#: A list that ignores its cursor proves what its single page holds, and nothing past it.
BLIND_PAST_A_PAGE = {"list-ignores-cursor"}
#: Profiles whose walk is run past more than a page of the account's older checks (``_older_history``).
PAGES_OF_HISTORY = {"list-oldest-first", "list-ignores-cursor", "list-small-page"}
#: Every profile the emulator's API answers as (``doccheck emulator --help``; its webhook senders,
#: ``webhook-*``, answer the API as the default). A profile the emulator does not know is refused
#: by ``create_app`` below, so a renamed one fails here.
PROFILES = ["ai-percent", "created-202", "default", "detail-errors", "list-history-oldest-first",
            "list-ignores-cursor", "list-no-metadata", "list-oldest-first", "list-small-page", "lost-answers",
            "message-errors", "no-get-by-id", "no-list", "no-odt", "no-replay-header", "plain-errors",
            "price-at-completion", "problem-errors", "queued", "reuse-refused", "reuse-refused-lost",
            "similarity-fraction", "status-synonyms", "string-error"]  # fmt: skip


def _docs(tag: str, n: int) -> list[Any]:
    return [
        planned(f"{tag}-{i}", ("ai", "similarity"), row=i + 1,
                text=f"Essay {tag} {i}: rivers, heat and shade in growing cities, season {i}. " * (10 + i))
        for i in range(n)
    ]  # fmt: skip


class Service:
    """The emulator in this process: one account, reached as the default and as ``profile``."""

    def __init__(self) -> None:
        self.emulator = Emulator(EmulatorConfig(api_keys=[KEY]))
        self.default = create_app(self.emulator)

    def client(self, profile: str = "default") -> AsyncDocCheckClient:
        app = self.default if profile == "default" else create_app(self.emulator, profile)
        return AsyncDocCheckClient("http://emulator/api/v1", KEY, transport=httpx.ASGITransport(app=app),
                                   retry=RetryPolicy(max_attempts=2, initial=0.01))  # fmt: skip

    def checks_by_ref(self) -> dict[str, list[str]]:
        """The ids of the checks carrying each ``doccheck_ref``: the service's own records."""
        found: dict[str, list[str]] = {}
        for check in self.emulator.store.accounts[KEY].checks.values():
            if "doccheck_ref" in check.metadata:
                found.setdefault(str(check.metadata["doccheck_ref"]), []).append(check.id)
        return found

    def charged_cents(self) -> int:
        """What the account was charged, net of refunds."""
        return self.emulator.store.accounts[KEY].charged_cents


async def _crash_state(service: Service, ledger: Ledger) -> dict[str, list[Any]]:
    """What a run SIGKILLed with requests in flight leaves: answers recorded, answers lost
    (the service made and charged the check), requests that never arrived, documents unsent."""
    groups = {"recorded": _docs("recorded", 2), "lost": _docs("lost", 3), "never-arrived": _docs("never", 2),
              "unsent": _docs("unsent", 2)}  # fmt: skip
    async with service.client() as client:
        await submit_batch(client, ledger, ledger.start_run(campaign="c"), groups["recorded"])
        dead_run = ledger.start_run(campaign="c")
        ledger.record_documents(dead_run, [d for name in ("lost", "never-arrived", "unsent") for d in groups[name]])
        for doc in groups["lost"] + groups["never-arrived"]:
            ledger.mark_submitting(doc.idempotency_key, campaign="c", document_id=doc.document_id,
                                   products=list(doc.products), mode="text")  # fmt: skip
            assert ledger.claim(doc.idempotency_key, "dead-run")
            assert ledger.mark_sending(doc.idempotency_key, "dead-run")
            if doc in groups["lost"]:
                await client.create_check(text=doc.text, products=list(doc.products),
                                          idempotency_key=doc.idempotency_key,
                                          metadata=with_reference(dict(doc.metadata), doc.idempotency_key))  # fmt: skip
            ledger.release_claim(doc.idempotency_key, "dead-run")  # the lease ran out
    return groups


async def _older_history(service: Service, n: int = 105) -> None:
    """More than one page (100) of the account's older checks, made before the crash."""
    async with service.client() as client:
        for i in range(n):
            await client.create_check(text=f"Older work {i} by other tools, about tides. " * 6, products=["ai"],
                                      idempotency_key=f"older-{i}", metadata={})  # fmt: skip


def _ledger_net(ledger: Ledger) -> int:
    with ledger.engine.connect() as conn:
        ids = [r[0] for r in conn.exec_driver_sql("SELECT check_id FROM submissions WHERE check_id IS NOT NULL")]
        return total_money(conn, ids).net_cents


def _assert_doubts_kept(profile: str, groups: dict[str, list[Any]], state: dict[str, Any], result: Any) -> None:
    """A list that cannot prove a key absent: what it does not show stays in doubt, never resent;
    what it shows is evidence (adopted) unless nothing can be found by (no list, no metadata)."""
    never, lost = groups["never-arrived"], groups["lost"]
    assert all(state[d.idempotency_key].state == "in_doubt" for d in never), (profile, result)
    found = [d for d in lost if state[d.idempotency_key].state == "submitted"]
    assert all(state[d.idempotency_key].state == "in_doubt" for d in lost if d not in found), (profile, result)
    if profile in BLIND:
        assert not found, profile  # none adopted by a guess
    assert result.in_doubt == result.incomplete == len(never) + len(lost) - len(found), (profile, result)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_resume_past_the_retention_adopts_resends_or_doubts_and_charges_each_document_once(
    profile: str, tmp_path: Path
) -> None:
    async def scenario(ledger: Ledger) -> None:
        service = Service()
        if profile in PAGES_OF_HISTORY:
            await _older_history(service)
        older_cents = service.charged_cents()
        groups = await _crash_state(service, ledger)
        made = service.checks_by_ref()  # the lost answers' checks, made and charged before the crash
        await service.emulator.advance(2 * DAY)  # past the 24 h key retention: a resend would bill again
        everything = [d for docs in groups.values() for d in docs]
        async with service.client(profile) as client:
            result = await submit_batch(client, ledger, ledger.start_run(campaign="c"), everything,
                                        SubmitOptions(concurrency=3))  # fmt: skip
        checks = service.checks_by_ref()
        assert all(len(ids) == 1 for ids in checks.values()), (profile, checks)  # 0 duplicate charges
        state = {d.idempotency_key: ledger.submission_for_key(d.idempotency_key) for d in everything}
        for doc in groups["recorded"] + groups["unsent"]:  # left alone, and sent: one check each
            row = state[doc.idempotency_key]
            assert row.state == "submitted" and checks[reference_for(doc.idempotency_key)] == [row.check_id]
        assert result.already_done == len(groups["recorded"]), (profile, result)
        for doc in groups["lost"]:  # never sent again: adopted (the very check) or in doubt
            ref = reference_for(doc.idempotency_key)
            assert checks[ref] == made[ref] and state[doc.idempotency_key].check_id in (None, *made[ref]), profile
        if profile in BLIND | BLIND_PAST_A_PAGE:
            _assert_doubts_kept(profile, groups, state, result)
            assert all(reference_for(d.idempotency_key) not in checks for d in groups["never-arrived"]), profile
            return
        assert result.in_doubt == 0 and {s.state for s in state.values()} == {"submitted"}, (profile, result)
        assert result.reconciled >= len(groups["lost"]), (profile, result)  # found by their reference
        for doc in groups["never-arrived"]:  # ruled out by the list: sent, once
            assert checks[reference_for(doc.idempotency_key)] == [state[doc.idempotency_key].check_id], profile
        await service.emulator.advance(120)  # every product finishes: results, refunds, late prices
        async with service.client(profile) as client:
            await poll_pending(client, ledger, campaign="c")
        assert _ledger_net(ledger) == service.charged_cents() - older_cents, profile  # service = ledger

    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        asyncio.run(scenario(ledger))
    finally:
        ledger.close()
