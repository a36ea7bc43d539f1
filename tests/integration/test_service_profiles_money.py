"""Issue 22, "Done when", with real processes: a `doccheck run` SIGKILLed with requests in
flight, then two overlapping `doccheck run`s on the same ledger resuming it after more than the
key retention, then `collect`, once for each kind of ledger write a resume makes, on SQLite and
on PostgreSQL. 0 duplicate charges, and service = ledger = report; where the rule leaves
documents ``in_doubt``, the run exits 3 naming ``doccheck resolve``, they are never resent,
and once the user settled the ones without a check (``--confirm-not-created``) a rerun sends
exactly those. Every command's output is free of tracebacks.

The truth is the service's own list, read as the default profile (a user looking at the
account): each document's ``doccheck_ref`` at most once, and every cent charged is in the
ledger or on a document the report names ``in_doubt``.

The kinds of ledger write (issue 42: one real crash test each, on each backend):

- a lost answer's check found in the list and adopted (its row ``submitted`` with the check's
  id), its price known only at completion and written by ``collect`` over the estimate
  (``price-at-completion``: the adoption of every proving list, and the late price, in one case);
- keys kept ``in_doubt``, settled by ``resolve``, the ones without a check sent again
  (``no-list``: the write of every list that cannot prove).

What each profile decides (adopt, resend, keep in doubt) and charges after the same crash is the
reconciler's: ``tests/unit/pipeline/test_reconcile_decisions.py`` runs that resume against every
profile of the emulator in process; a lost answer's replay adopted, a refused replay looked up
(``lost-answers``, ``reuse-refused-lost``) and the collect of a service without
``GET /checks/{id}`` run against the emulator in ``tests/integration/test_service_profiles.py``,
where every profile's resume past the retention runs too.

Cost: one emulator for the module, one account per case, 12 documents; per case a crashing
library run, two `doccheck run --no-prefect`s in parallel and `collect`/`resolve` in this
process. 4 cases. The runs leave Prefect out: the ledger's writes are the library's either
way (tests/integration/test_run_without_prefect.py shows the two paths equal), and the flow's
own crash and overlap are tests/integration/test_keys_in_flight.py's.

Not settled here: a document in doubt whose check does exist stays in doubt (``resolve`` has
no way to adopt a check id); its cents are the only ones outside the ledger, counted apart.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from doccheck.ledger import Ledger
from doccheck.pipeline import reference_for
from tests.factories import doccheck_in_process
from tests.fixtures.emulator import EmulatorHandle
from tests.fixtures.postgres import backend_url
from tests.integration.test_keys_in_flight import (
    CRASHING_RUN,
    cli_env,
    crash_flow,
    expire_claims,
    finish,
    run_in_process,
    start_run,
    write_manifest,
)

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server, pytest.mark.slow]

#: One profile for each kind of ledger write a crash and its resumes can end in.
KINDS_OF_WRITE = {
    "price-at-completion": "a lost answer's check adopted from the list, its price written at completion",
    "no-list": "keys kept in doubt, settled by resolve, the ones without a check sent again",
}
#: Lists that can prove nothing: every key lost in the crash stays in doubt.
BLIND = {"no-list"}
#: What the run says about why (the mismatch), besides the next step.
MISMATCH = {"no-list": "the service has no list of checks"}
N_DOCS = 12
DAY = 86400


#: The crash of test_keys_in_flight (stalled at the 4th recorded answer with requests in flight,
#: then SIGKILLed), running the same pipeline (``run_checks``) with the library's own steps
#: instead of the Prefect flow: seconds less per case, and the resumes are real `doccheck run`s.
CRASHING_LIBRARY_RUN = CRASHING_RUN.split("from doccheck.pipeline._options import RunOptions")[0] + textwrap.dedent(
    """
    import os
    from doccheck.client import AsyncDocCheckClient, lanes_for
    from doccheck.pipeline._options import RunOptions
    from doccheck.pipeline._orchestrate import LocalSteps, run_checks

    manifest, db_url, base_url = sys.argv[1:4]

    async def main():
        options = RunOptions.from_flat(manifest=manifest, out_dir="reports", campaign="course", base_url=base_url,
                                       database_url=db_url, concurrency=6, wait=False)
        ledger = Ledger(db_url)
        async with AsyncDocCheckClient(base_url, os.environ["DOCCHECK_API_KEY"], max_connections=lanes_for(6)) as client:
            await run_checks(options, LocalSteps(ledger, client, write_files=False))

    asyncio.run(main())
    """
)


@pytest.fixture(scope="module")
def emulator(isolated_emulator: EmulatorHandle) -> EmulatorHandle:
    return isolated_emulator


def _cases() -> list[Any]:
    return [pytest.param(p, b, id=f"{p}-{b}") for p in KINDS_OF_WRITE for b in ("sqlite", "postgres")]


def _crash(emulator: EmulatorHandle, key: str, manifest: Path, database_url: str, tmp_path: Path) -> None:
    """Kill the run once it stalled and at least 6 checks exist (several answers never recorded)."""
    emulator.set_faults(latency_ms=200)  # several requests in flight at the kill
    crash_flow(CRASHING_LIBRARY_RUN, tmp_path, cli_env(emulator, key), str(manifest), database_url,
               emulator.base_url, emulator=emulator, key=key, checks=6)  # fmt: skip
    emulator.reset_faults()


def service_truth(emulator: EmulatorHandle, key: str, profile: str) -> dict[str, dict[str, int]]:
    """Each ``doccheck_ref`` at the service: how many checks carry it and their net cents.

    Read as the user would in the account's dashboard: the emulator's own list (default
    profile, newest first, with metadata), whatever the profile under test shows."""
    emulator.set_profile("default", api_key=key)
    counts: Counter[str] = Counter()
    cents: Counter[str] = Counter()
    try:
        with emulator.client(api_key=key) as http:
            after: str | None = None
            for _ in range(100):
                params: dict[str, Any] = {"limit": 100, **({"starting_after": after} if after else {})}
                page = http.get("/checks", params=params).raise_for_status().json()
                for check in page["data"]:
                    ref = (check.get("metadata") or {}).get("doccheck_ref", "?")
                    counts[ref] += 1
                    cost = check.get("cost") or {}
                    cents[ref] += int(cost.get("total_cents", 0)) - int(cost.get("refunded_cents", 0))
                if not page["has_more"]:
                    break
                after = page["data"][-1]["id"]
    finally:
        emulator.set_profile(profile, api_key=key)
    return {ref: {"checks": counts[ref], "net_cents": cents[ref]} for ref in counts}


def _no_traceback(*outputs: str) -> None:
    for text in outputs:
        assert "Traceback" not in text, text


def _cli(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """``doccheck collect`` / ``resolve`` in this process (a subprocess each would cost seconds of imports)."""
    done = doccheck_in_process(list(args), env)
    _no_traceback(done.stdout, done.stderr)
    return done.returncode, done.stdout, done.stderr


def _rows(ledger: Ledger) -> list[Any]:
    with ledger.engine.connect() as conn:
        return list(conn.exec_driver_sql("SELECT document_id, idempotency_key, state, check_id FROM submissions"))


def _overlapping_resumes(manifest: Path, database_url: str, env: dict[str, str]) -> list[tuple[int, str, str]]:
    """Two `doccheck run`s of the campaign at once on one ledger (a cron run and a hand-started one)."""
    runs = [start_run(manifest, database_url, env, "--concurrency", "4", "--no-prefect") for _ in range(2)]
    try:
        results = [finish(p, timeout=180) for p in runs]
    finally:
        for p in runs:
            if p.poll() is None:
                p.kill()
    for code, out, err in results:
        _no_traceback(out, err)
        assert code in (0, 3), (code, out, err)
        if code == 3:  # incomplete: every reason named with the command that continues
            assert "doccheck run" in out or "doccheck resolve --campaign course" in out, out
    return results


def _settle_the_ones_without_a_check(
    ledger: Ledger, truth: dict[str, dict[str, int]], env: dict[str, str], database_url: str
) -> list[Any]:
    """What a user does after looking at the account: the documents in doubt that have no check
    are confirmed not created (the next run sends them); the rest stay in doubt, never resent."""
    doubtful = [r for r in _rows(ledger) if r.state == "in_doubt"]
    code, out, _ = _cli(env, "resolve", "--campaign", "course", "--database-url", database_url)
    assert code == 0 and all(reference_for(r.idempotency_key) in out for r in doubtful), out
    absent = [r for r in doubtful if reference_for(r.idempotency_key) not in truth]
    if absent:
        docs = [a for r in absent for a in ("--document", r.document_id)]
        code, out, _ = _cli(env, "resolve", "--campaign", "course", "--confirm-not-created",
                            "--database-url", database_url, *docs)  # fmt: skip
        assert code == 0 and f"{len(absent)} documents settled" in out, out
    return [r for r in doubtful if r not in absent]


@pytest.mark.parametrize(("profile", "backend"), _cases())
def test_crash_then_overlapping_resumes_past_the_retention_bill_each_document_once(
    prefect_server: Any,
    emulator: EmulatorHandle,
    profile: str,
    backend: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    database_url = backend_url(backend, request, tmp_path)
    key = emulator.new_account()
    emulator.set_profile(profile, api_key=key)
    manifest = write_manifest(tmp_path, N_DOCS)
    env = cli_env(emulator, key)
    _crash(emulator, key, manifest, database_url, tmp_path)
    lost_at_crash = {
        r.idempotency_key for r in _rows(Ledger(database_url)) if r.state != "submitted" and r.check_id is None
    }
    emulator.advance(2 * DAY)  # past the 24 h key retention: a resend would bill again
    ledger = Ledger(database_url)
    expire_claims(ledger)  # the dead run's leases are long over
    results = _overlapping_resumes(manifest, database_url, env)

    truth = service_truth(emulator, key, profile)
    assert all(t["checks"] == 1 for t in truth.values()), (profile, truth)  # 0 duplicate charges
    doubtful = [r for r in _rows(ledger) if r.state == "in_doubt"]
    if doubtful:  # the rule: reported with the next step, exit 3, never resent
        assert any(code == 3 and "doccheck resolve --campaign course" in out for code, out, _ in results), results
        assert {r.idempotency_key for r in doubtful} <= lost_at_crash
        said = " ".join(" ".join(out.split()) for code, out, _ in results if code == 3)
        assert "why: an earlier request may have created a check" in said, results  # the mismatch, named
        assert MISMATCH.get(profile, "") in said, results
    if profile in BLIND:
        assert doubtful, (profile, results)  # nothing can prove a lost key: none adopted by a guess
    else:  # the list proved every lost key one way or the other
        assert not doubtful, (profile, results)
    still = _settle_the_ones_without_a_check(ledger, truth, env, database_url) if doubtful else []
    if any(r.state not in ("submitted", "in_doubt") for r in _rows(ledger)):
        code, out, err = run_in_process(manifest, database_url, env)  # sends what is settled (no overlap: in process)
        _no_traceback(out, err)
        assert code == (3 if still else 0), (profile, code, out, err)
    truth = service_truth(emulator, key, profile)
    assert all(t["checks"] == 1 for t in truth.values()), (profile, truth)  # still 0 duplicate charges
    rows = _rows(ledger)
    assert [r.state for r in rows].count("submitted") + len(still) == N_DOCS, (profile, rows)
    assert len({r.check_id for r in rows if r.check_id}) == N_DOCS - len(still)

    emulator.advance(120)  # every product finishes; collect reads results, refunds and late prices
    code, out, err = _cli(env, "collect", "--campaign", "course", "--database-url", database_url,
                          "--out", str(tmp_path / "reports"))  # fmt: skip
    assert code in (0, 3), (profile, code, out, err)
    assert ledger.outcome_counts(campaign="course")["pending"] == 0, (profile, out, err)  # nothing left unread
    truth = service_truth(emulator, key, profile)
    unreachable = sum(truth[reference_for(r.idempotency_key)]["net_cents"] for r in still)
    with ledger.engine.connect() as conn:
        ledger_net = conn.exec_driver_sql("SELECT sum(charged_cents - refunded_cents) FROM check_costs").scalar()
    report = ledger.report_rows(campaign="course")["submissions"]
    service_net = sum(t["net_cents"] for t in truth.values())
    # service = ledger (+ the cents of the checks only the user can find, on documents reported in doubt)
    assert ledger_net + unreachable == service_net == emulator.account_state(key)["charged_cents"], profile
    assert sum(r["net_cents"] for r in report) == ledger_net, profile  # ledger = report
    assert sum(r["status"] == "in_doubt" for r in report) == len(still), (profile, report)
    ledger.close()
