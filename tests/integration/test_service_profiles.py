"""Issue 22: against every emulator profile (another valid reading of the interface), money and
truth hold: 0 duplicate charges and service = ledger after a crash, lost answers and a
resume past the key retention; no out-of-range score as data; no hang, no crash of the run.

Real sockets: a private emulator (its clock moves by days), one account per test, each
answering as one variant (``POST /_emulator/profile``). The truth is the emulator's state.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doccheck.client import AsyncDocCheckClient, RetryPolicy
from doccheck.ledger import Ledger, total_money
from doccheck.pipeline import SubmitOptions, poll_pending, submit_batch
from doccheck.pipeline.sending._reconcile import with_reference
from tests.factories import doccheck_in_process, planned
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_faults_after")]

#: Profiles whose list can rule a check out or find it (the resume adopts the lost checks);
#: ``list-history-oldest-first`` is read past its history to its end (issue 39).
LISTS_THAT_PROVE = ["default", "message-errors", "problem-errors", "plain-errors", "created-202",
                    "no-replay-header", "queued", "status-synonyms", "string-error", "reuse-refused",
                    "price-at-completion", "list-small-page", "no-get-by-id",
                    "list-history-oldest-first"]  # fmt: skip
#: Profiles whose list proves nothing: the resume keeps the lost keys in doubt, never resends.
LISTS_THAT_CANNOT = ["list-no-metadata", "list-oldest-first", "list-ignores-cursor", "no-list"]
DAY = 86400


@pytest.fixture(scope="module")
def emulator(isolated_emulator: EmulatorHandle) -> EmulatorHandle:
    return isolated_emulator


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    yield led
    led.close()


def _docs(n: int, tag: str, products: tuple[str, ...] = ("ai", "similarity")) -> list[Any]:
    return [
        planned(f"{tag}-{i}", products, row=i + 1,
                text=f"Essay {tag} {i}: rivers, heat and shade in growing cities, season {i}. " * (10 + i))
        for i in range(n)
    ]  # fmt: skip


def _client(emulator: EmulatorHandle, key: str) -> AsyncDocCheckClient:
    return AsyncDocCheckClient(emulator.base_url, key, retry=RetryPolicy(max_attempts=2, initial=0.05))


async def _lose_answers(emulator: EmulatorHandle, key: str, ledger: Ledger, run_id: str, docs: list[Any]) -> None:
    """A run that died after sending: the ledger says ``sending``, the service has the checks."""
    ledger.record_documents(run_id, docs)
    async with _client(emulator, key) as client:
        for doc in docs:
            ledger.mark_submitting(doc.idempotency_key, campaign="c", document_id=doc.document_id,
                                   products=list(doc.products), mode="text")  # fmt: skip
            assert ledger.claim(doc.idempotency_key, "dead-run") and ledger.mark_sending(
                doc.idempotency_key, "dead-run"
            )
            await client.create_check(text=doc.text, products=list(doc.products), idempotency_key=doc.idempotency_key,
                                      metadata=with_reference(dict(doc.metadata), doc.idempotency_key))  # fmt: skip
            ledger.release_claim(doc.idempotency_key, "dead-run")


def _ledger_money(ledger: Ledger) -> tuple[int, int]:
    with ledger.engine.connect() as conn:
        ids = [r[0] for r in conn.exec_driver_sql("SELECT check_id FROM submissions WHERE check_id IS NOT NULL")]
        money = total_money(conn, ids)
    return money.charged_cents, money.net_cents


@pytest.mark.parametrize("profile", LISTS_THAT_PROVE + LISTS_THAT_CANNOT)
def test_resume_after_the_key_retention_never_bills_twice(
    emulator: EmulatorHandle, ledger: Ledger, profile: str, tmp_path: Path
) -> None:
    key = emulator.new_account()
    emulator.set_profile(profile, api_key=key)
    older = _docs(3, "older")  # the account's earlier checks (an oldest-first list shows them first)
    asyncio.run(_submit(emulator, key, ledger, older))
    lost = _docs(6, "lost")
    asyncio.run(_lose_answers(emulator, key, ledger, ledger.start_run(campaign="c"), lost))
    emulator.advance(2 * DAY)  # past the emulator's 24 h retention: a resend would bill again
    result = asyncio.run(_submit(emulator, key, ledger, lost))
    state = emulator.account_state(key)
    assert state["checks"] == len(older) + len(lost), (profile, state)  # 0 duplicate charges
    if profile in LISTS_THAT_CANNOT:
        # found is evidence (adopted); anything not found stays in doubt, reported, never resent
        assert result.submitted == 0 and result.reconciled + result.in_doubt == len(lost), result
        states = [ledger.submission_for_key(d.idempotency_key).state for d in lost]
        assert states.count("in_doubt") == result.in_doubt and result.incomplete == result.in_doubt
        if profile in ("list-no-metadata", "no-list"):  # nothing to find them by: every one in doubt
            assert result.in_doubt == len(lost)
        # (a single complete page, oldest first or cursor ignored, still proves what it holds;
        # longer lists of those profiles: tests/unit/pipeline/test_reconcile_profiles.py)
    else:
        assert (result.reconciled, result.submitted, result.in_doubt) == (len(lost), 0, 0)
        asyncio.run(_finish(emulator, key, ledger))
        charged, net = _ledger_money(ledger)
        assert net == emulator.account_state(key)["charged_cents"], profile  # service = ledger


async def _submit(emulator: EmulatorHandle, key: str, ledger: Ledger, docs: list[Any], **kw: Any) -> Any:
    async with _client(emulator, key) as client:
        return await submit_batch(
            client, ledger, ledger.start_run(campaign="c"), docs, SubmitOptions(concurrency=3, **kw)
        )


async def _finish(emulator: EmulatorHandle, key: str, ledger: Ledger) -> None:
    emulator.advance(120)  # every product finishes
    async with _client(emulator, key) as client:
        polled = await poll_pending(client, ledger, campaign="c")
    assert polled.errors == {} or all("404" in e or "not_found" in e for e in polled.errors.values())


@pytest.mark.parametrize(
    ("profile", "scale"),
    [("ai-percent", None), ("ai-percent", {"ai_score_range": [0, 100]}),
     ("similarity-fraction", {"similarity_score_range": [0, 1]}), ("status-synonyms", None), ("string-error", None), ("queued", None), ("price-at-completion", None),
     ("problem-errors", None)],
)  # fmt: skip
def test_truth_and_money_after_completion(
    emulator: EmulatorHandle,
    ledger: Ledger,
    profile: str,
    scale: dict[str, Any] | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if scale is not None:
        path = tmp_path / "service-profile.json"
        path.write_text(json.dumps({"name": profile, **scale}))
        monkeypatch.setenv("DOCCHECK_SERVICE_PROFILE", str(path))
    key = emulator.new_account()
    emulator.set_profile(profile, api_key=key)
    emulator.set_faults(product_failure_rate=0.3, seed=7)
    docs = _docs(8, profile)
    asyncio.run(_submit(emulator, key, ledger, docs))
    asyncio.run(_finish(emulator, key, ledger))
    counts = ledger.outcome_counts(campaign="c")
    assert counts["pending"] == 0, (profile, counts)  # synonyms and queued end; nothing sits unread
    with ledger.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT product, status, score, error_code FROM outcomes").all()
    for product, _status, score, _code in rows:
        if score is not None:  # reported on our scales whatever the service's
            assert 0 <= score <= (100 if product == "similarity" else 1), (profile, product, score)
    if profile == "ai-percent" and scale is None:  # answers out of range: loud errors, never data
        assert any(r[3] == "invalid_response" for r in rows if r[0] == "ai")
    if scale is not None:  # the service's scale given in the profile: every result read, on ours
        assert not any(r[3] == "invalid_response" for r in rows)
        assert any(r[0] == "similarity" and r[2] and r[2] > 1 for r in rows) or profile != "similarity-fraction"
    charged, net = _ledger_money(ledger)
    assert net == emulator.account_state(key)["charged_cents"], (profile, charged, net)  # refunds and late prices


#: What ``doccheck probe`` must report as differing for each profile (with checks in the account).
PROBE_DIFFERS: dict[str, set[str]] = {
    "default": set(),
    "message-errors": {"error body shape"},
    "detail-errors": {"error body shape"},
    "problem-errors": {"error body shape"},
    "plain-errors": {"error body shape"},
    "string-error": {"error body shape"},
    "list-no-metadata": {"listed checks carry metadata"},
    "list-oldest-first": {"list newest first"},
    "list-history-oldest-first": {"list newest first"},  # seen past a first page of history made in one second
    "list-ignores-cursor": {"list honours starting_after"},
    "list-small-page": {"list page limit"},
    "no-list": {"GET /checks lists checks"},
    "no-get-by-id": {"GET /checks/{id} retrieves a check"},
    "created-202": set(),
    "no-replay-header": set(),
    "reuse-refused": set(),
    "lost-answers": set(),
    "reuse-refused-lost": set(),
    "price-at-completion": set(),
    "queued": set(),
    "status-synonyms": set(),
    "ai-percent": set(),
    "similarity-fraction": set(),
}


@pytest.mark.parametrize("profile", sorted(PROBE_DIFFERS))
def test_probe_reports_each_profiles_differences_and_charges_nothing(
    emulator: EmulatorHandle, ledger: Ledger, profile: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from doccheck.cli import app
    from doccheck.client import load_profile

    key = emulator.new_account()
    asyncio.run(_submit(emulator, key, ledger, _docs(3, "probe")))  # checks to look at (billed before)
    emulator.advance(60)  # two minutes apart: the order of the list can be seen
    asyncio.run(_submit(emulator, key, ledger, _docs(1, "probe-late")))
    emulator.set_profile(profile, api_key=key)
    before = emulator.account_state(key)
    out = tmp_path / "service-profile.json"
    env = {"DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": key, "COLUMNS": "240"}
    result = CliRunner().invoke(app, ["probe", "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output
    after = emulator.account_state(key)
    assert (after["checks"], after["charged_cents"]) == (before["checks"], before["charged_cents"])  # free
    learnt = load_profile(out)
    differs = {name for name, verdict in learnt.probed.items() if verdict == "differs"}
    assert differs == PROBE_DIFFERS[profile], (profile, differs, result.output)
    assert key not in result.output
    if profile == "no-list":
        assert not learnt.list_checks
    if profile == "list-no-metadata":
        assert not learnt.list_metadata
    if profile == "list-small-page":
        assert learnt.list_max_page == 20


def test_a_price_known_at_completion_counts_the_estimate_in_the_budget(
    emulator: EmulatorHandle, ledger: Ledger
) -> None:
    """Before: cost 0 on create let a second run with ``--max-spend-cents 20`` spend again."""
    from doccheck.ledger import budget_state
    from doccheck.pipeline import Budget

    key = emulator.new_account()
    emulator.set_profile("price-at-completion", api_key=key)
    docs = _docs(6, "budget")  # estimated 3 cents each
    asyncio.run(_submit(emulator, key, ledger, docs[:3], budget=Budget(max_spend_cents=10)))
    state = budget_state(ledger, "c")
    assert (state.spent_cents, state.reserved_cents) == (0, 9)  # the estimates, while the price is unknown
    second = asyncio.run(_submit(emulator, key, ledger, docs[3:], budget=Budget(max_spend_cents=10)))
    assert (second.submitted, second.skipped_budget) == (0, 3)
    asyncio.run(_finish(emulator, key, ledger))
    state = budget_state(ledger, "c")
    charged = emulator.account_state(key)["charged_cents"]
    assert (state.spent_cents, state.reserved_cents) == (charged, 0)  # the price replaced the estimate
    assert _ledger_money(ledger)[0] == charged


@pytest.mark.parametrize("profile", ["lost-answers", "reuse-refused-lost"])
def test_answers_lost_after_the_charge_are_recovered_not_failed(
    emulator: EmulatorHandle, ledger: Ledger, profile: str
) -> None:
    """Before (reuse-refused): after a lost 502 the retry was refused 409 and the document
    reported ``failed``, no check id, 0 cents, for a billed check (service 36 c, report 18 c)."""
    key = emulator.new_account()
    emulator.set_profile(profile, api_key=key)
    docs = _docs(12, profile)
    result = asyncio.run(_submit(emulator, key, ledger, docs))
    state = emulator.account_state(key)
    assert state["checks"] == len(docs) and result.failed == 0 and result.in_doubt == 0, result
    rows = [ledger.submission_for_key(d.idempotency_key) for d in docs]
    assert {r.state for r in rows} == {"submitted"} and len({r.check_id for r in rows}) == len(docs)
    if profile == "reuse-refused-lost":
        assert result.reconciled >= 1  # the refused replays were looked up and adopted
    assert _ledger_money(ledger)[0] == state["charged_cents"]  # service = ledger


def test_collect_against_a_service_without_get_by_id_names_the_missing_path(
    emulator: EmulatorHandle, ledger: Ledger, tmp_path: Path
) -> None:
    """Nothing can be polled (every ``GET /checks/{id}`` answers 404): `doccheck collect` names the
    missing path and the next step, not just "pending", and the money is what was charged at
    creation (moved here from the crash matrix of test_service_profiles_money.py: no ledger write
    of its own, so no crash of its own)."""
    key = emulator.new_account()
    emulator.set_profile("no-get-by-id", api_key=key)
    asyncio.run(_submit(emulator, key, ledger, _docs(4, "unpolled")))
    emulator.advance(120)  # every product finishes at the service
    env = {"DOCCHECK_BASE_URL": emulator.base_url, "DOCCHECK_API_KEY": key}
    done = doccheck_in_process(["collect", "--campaign", "c", "--database-url", f"sqlite:///{tmp_path / 'ledger.db'}",
                                "--out", str(tmp_path / "reports")], env)  # fmt: skip
    out = done.stdout
    assert done.returncode in (0, 3) and "Traceback" not in out + done.stderr, (out, done.stderr)
    assert "warning: polling" in out and "no GET /checks/{id}" in out and "doccheck probe" in out, (out, done.stderr)
    charged, net = _ledger_money(ledger)
    report = ledger.report_rows(campaign="c")["submissions"]
    assert net == emulator.account_state(key)["charged_cents"] == sum(r["net_cents"] for r in report)
