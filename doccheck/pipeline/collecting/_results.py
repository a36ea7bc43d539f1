"""Collecting results: apply webhook events, poll what stays silent, wait until done.

Webhooks say WHEN a product finished (their check summary carries no scores); one
GET /checks/{id} then fetches WHAT it found. Polling is also the fallback for products
with no event after a grace period (a dropped delivery, a receiver outage), so a run
completes with webhooks, without them, or with a mix.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from doccheck.client import AsyncDocCheckClient, AuthenticationError, DocCheckError, current_profile
from doccheck.ledger import Ledger, PendingCheck, retry_transient_async
from doccheck.outputs import LedgerReportTables
from doccheck.pipeline._failures import first_error
from doccheck.pipeline._options import DEFAULT_CONCURRENCY
from doccheck.pipeline._progress import ProgressCallback, report
from doccheck.pipeline.collecting._waiting import PollSchedule, expects_webhooks

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PendingProduct:
    """A product with no final result yet: reported, never silently dropped."""

    check_id: str
    product: str
    status: str


@dataclass
class PollResult:
    """``polled`` checks fetched, ``updated`` products that changed, ``errors`` per check id."""

    polled: int = 0
    updated: int = 0
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class WaitResult:
    """The end state of ``wait_for_results``: all final, or ``timed_out`` with ``pending``."""

    total: int = 0
    completed: int = 0
    failed: int = 0
    pending: list[PendingProduct] = field(default_factory=list)
    events_applied: int = 0
    polled: int = 0
    timed_out: bool = False
    errors: dict[str, str] = field(default_factory=dict)


def apply_events(ledger: Ledger) -> int:
    """Apply the webhook events the receiver stored; returns how many were applied."""
    return ledger.apply_pending_events()


def _due(pc: PendingCheck, older_than_seconds: float, now: datetime) -> bool:
    if pc.awaiting_fetch:
        return True  # an event said it finished: fetch the result now
    if not pc.silent_products:
        return False
    if older_than_seconds <= 0:
        return True
    refs = [t for t in (pc.submitted_at, pc.last_polled_at) if t is not None]
    if not refs:
        return True
    return (now - max(refs)).total_seconds() >= older_than_seconds


async def poll_pending(
    client: AsyncDocCheckClient,
    ledger: Ledger,
    *,
    run_id: str | None = None,
    campaign: str | None = None,
    older_than_seconds: float = 0,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> PollResult:
    """GET the checks whose products are not final and record what they say.

    A check is fetched when an event said a product finished (to get its scores), or,
    with ``older_than_seconds`` > 0, when a product has had no event for that long since
    it was submitted or last polled (so webhooks do the work when they arrive).
    A 401 is raised (configuration); other per-check errors are returned, not raised.
    """
    if not current_profile().get_by_id:
        return PollResult()  # no retrieve path (service profile): nothing to poll, see wait_for_results
    now = datetime.now(UTC)
    due = [
        pc.check_id
        for pc in ledger.pending_checks(run_id=run_id, campaign=campaign)
        if _due(pc, older_than_seconds, now)
    ]
    result = PollResult()
    if not due:
        return result
    sem = asyncio.Semaphore(max(1, concurrency))

    async def fetch(check_id: str) -> None:
        async with sem:
            try:
                check = await client.get_check(check_id)
            except AuthenticationError:
                raise
            except DocCheckError as exc:
                result.errors[check_id] = f"{exc.code or exc.status_code}: {exc.message}"
                return
        result.polled += 1
        result.updated += ledger.record_check(check, source="poll")

    try:
        async with asyncio.TaskGroup() as group:
            for check_id in due:
                group.create_task(fetch(check_id))
    except BaseExceptionGroup as eg:
        raise first_error(eg) from None
    ledger.mark_polled(due)
    return result


def describe_poll_errors(errors: dict[str, str], seen: set[str] | None = None) -> list[str]:
    """What polling could not read, one sentence per kind of error not in ``seen`` (which
    it extends): a 404 on every ``GET /checks/{id}`` is a service without that path, not
    "pending", and the sentence says what to do."""
    seen = set() if seen is None else seen
    out: list[str] = []
    for check_id, error in errors.items():
        kind = error.split(":", 1)[0]
        if kind in seen:
            continue
        seen.add(kind)
        same = sum(e.split(":", 1)[0] == kind for e in errors.values())
        hint = (
            " (the service may have no GET /checks/{id}: results then come only by webhook; "
            "see `doccheck probe` and docs/service-profile.md)"
            if kind in ("not_found", "404", "http_404")
            else ""
        )
        out.append(f"polling {same} checks failed with {error[:200]}, e.g. check {check_id}{hint}")
    return out


def _warn_poll_errors(errors: dict[str, str], warned: set[str]) -> None:
    """Log :func:`describe_poll_errors` once per kind (the Prefect UI's run log)."""
    for line in describe_poll_errors(errors, warned):
        log.warning("%s", line)


def _pending(ledger: Ledger, run_id: str) -> list[PendingProduct]:
    return [PendingProduct(o.check_id, o.product, o.status) for o in ledger.pending_outcomes(run_id=run_id)]


async def wait_for_results(
    client: AsyncDocCheckClient,
    ledger: Ledger,
    run_id: str,
    *,
    timeout: float = 600,
    grace_seconds: float = 30,
    poll_interval: float = 2,
    on_progress: ProgressCallback | None = None,
    webhooks: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> WaitResult:
    """Until every product of the run is final or ``timeout`` passes: apply the events the
    receiver wrote to the ledger, fetch products an event announced, poll the rest.
    On timeout the rest is returned as ``pending`` (with check ids) for
    ``collect_results`` to pick up later.

    ``webhooks`` says whether completions will be delivered (None: ask the service
    whether the account has a webhook endpoint, see ``doccheck.pipeline.collecting._waiting``).
    With webhooks, a product is polled only after ``grace_seconds`` without an event,
    every ``poll_interval``; without, every product is polled from the start, first
    after a quarter second and then less often, up to ``poll_interval``.
    """
    start = clock()
    result = WaitResult()
    if webhooks is None:
        webhooks = await expects_webhooks(client)
    grace = grace_seconds if webhooks else 0.0
    schedule = PollSchedule(ceiling=poll_interval, factor=1.0 if webhooks else 2.0)
    warned: set[str] = set()
    if not current_profile().get_by_id:
        log.warning(
            "the service profile says the service has no GET /checks/{id}: results cannot be fetched, "
            "products stay pending with their check ids (docs/service-profile.md)"
        )

    async def one_round() -> tuple[int, PollResult, dict[str, int]]:
        applied = apply_events(ledger)
        polled = await poll_pending(client, ledger, run_id=run_id, older_than_seconds=grace)
        return applied, polled, ledger.outcome_counts(run_id=run_id)

    while True:
        # a database blip: the round (idempotent: apply, poll, count) is run again, for a few seconds
        applied, polled, counts = await retry_transient_async(one_round)
        result.events_applied += applied
        result.polled += polled.polled
        result.errors.update(polled.errors)
        _warn_poll_errors(polled.errors, warned)
        if not counts["pending"]:
            break
        report(on_progress, counts["completed"] + counts["failed"], counts["total"], "wait")
        if clock() - start >= timeout:
            result.timed_out = True
            break
        await sleep(schedule.next_interval())
    counts = ledger.outcome_counts(run_id=run_id)
    result.total, result.completed, result.failed = counts["total"], counts["completed"], counts["failed"]
    result.pending = _pending(ledger, run_id) if counts["pending"] else []
    report(on_progress, result.completed + result.failed, result.total, "wait")
    return result


def report_tables(ledger: Ledger, run_id: str) -> LedgerReportTables:
    """``ReportTables`` of a run, read from the ledger alone in chunks (see ``doccheck.ledger._report_rows``)."""
    return LedgerReportTables.from_ledger(ledger, run_id=run_id)
