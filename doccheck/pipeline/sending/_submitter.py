"""``submit_batch``: send a batch of planned documents, at most once per Idempotency-Key.

The order of writes is what makes crashes harmless: the ledger says ``submitting``
BEFORE the request and ``submitted`` after it, and the key is deterministic. Whatever
point a run dies at, the resume either finds ``submitted`` (nothing to do) or sends the
same key again, which the service answers with the original check and no charge.

Three more rules make that hold under concurrency, long gaps and a flaky service (see
docs/ledger.md): a key is sent only under its claim in the ledger (one process at a time);
a key whose earlier request may have reached the service is looked up in ``GET /checks``
(``doccheck.pipeline.sending._reconcile``) before it is sent again; and 429/5xx/network errors are
requeued until the run's submit deadline instead of becoming final failures.

This module decides whether, when and under which claim each document is sent and what its
answer or refusal means; how one document's requests go, by mode, is
:mod:`doccheck.pipeline.sending._requests`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from doccheck import ledger as ledger_surface
from doccheck.client import (
    AsyncDocCheckClient,
    AuthenticationError,
    Check,
    ConfigurationError,
    DocCheckError,
    RetryPolicy,
    current_profile,
    learn_refused_type,
    unsupported_type_refusal,
)
from doccheck.domain import SubmissionState
from doccheck.errors import ClaimLost, FatalSubmitError
from doccheck.extract import extension_of, is_supported
from doccheck.ledger import (
    Answer,
    ClaimRequest,
    Ledger,
    Prepare,
    previous_submissions,
    record_documents,
    record_prepares,
    retry_transient,
)
from doccheck.pipeline._batch_result import BatchResult as BatchResult
from doccheck.pipeline._batch_result import RowFailure as RowFailure
from doccheck.pipeline._failures import TRANSIENT_ERRORS, first_error
from doccheck.pipeline._failures import error_code as _error_code
from doccheck.pipeline._gc_freeze import collections_skip_older_objects
from doccheck.pipeline._learnt_types import adopt_learnt_refusals, remember_refusal, service_of
from doccheck.pipeline._progress import report
from doccheck.pipeline.planning._plan import as_text
from doccheck.pipeline.sending._attempts import Attempt, begin_attempt, count_done, end_attempt
from doccheck.pipeline.sending._campaign_cap import bind_budget
from doccheck.pipeline.sending._document_files import file_of
from doccheck.pipeline.sending._ledger_writer import GroupCommit, LedgerWriter
from doccheck.pipeline.sending._reconcile import Reconciler, needs_reconciliation
from doccheck.pipeline.sending._requests import DocumentRequests
from doccheck.pipeline.sending._submit_options import DEFAULT_SUBMIT, SubmitOptions
from doccheck.pipeline.sending._submit_options import DEFAULT_UPLOAD_CONCURRENCY as DEFAULT_UPLOAD_CONCURRENCY
from doccheck.storage import file_name

if TYPE_CHECKING:
    from doccheck.ledger import SubmissionRow

log = logging.getLogger(__name__)

#: Ledger states of a key whose request never left (a refusal then is about the document).
_NEVER_SENT_STATES = frozenset({"planned", "rejected", "skipped_budget"})
#: Stands for "a row exists" when a refusal comes on a retry within this batch.
_SENT: Any = object()

#: Backoff between requeued attempts of one document (after the client's own retries):
#: 1 s doubling to 30 s, jittered; a 429's Retry-After is honoured up to 60 s.
REQUEUE_POLICY = RetryPolicy(initial=1.0, max_backoff=30.0, max_retry_after=60.0)
#: Backoff while another live process holds a key (it will usually finish it).
ELSEWHERE_POLICY = RetryPolicy(initial=0.5, max_backoff=5.0)

#: Documents in progress per request slot: the ledger work of the next documents overlaps the
#: requests in flight, enough to fill large rounds (a crash leaves at most ``3 × concurrency``
#: extra keys marked ``sending`` but not sent; the resume reconciles them like any key in doubt,
#: in one walk of ``GET /checks``). Not at concurrency 1: one document from claim to answer.
PIPELINE_DEPTH = 4

#: A ledger round commits at once when it holds this many items (answers and claims) per request
#: slot; else it waits up to ``ROUND_MAX_WAIT_SECONDS`` while requests are in flight (``GroupCommit``).
#: Why: a round costs ~1.5 ms of CPU plus ~0.15 ms a document, so rounds of ~16 documents instead of
#: ~5 halve the ledger's CPU a document and the writer thread holds the GIL less (issue 10).
ROUND_ITEMS_PER_SLOT = 2
ROUND_MAX_WAIT_SECONDS = 0.02


def _groupable(doc: Any) -> bool:
    """Text and multipart documents: one request, so ``submitting`` and ``sending`` are
    written together, in a grouped commit (upload mode records its upload id between them)."""
    return (doc.mode == "text" and doc.text is not None) or (doc.mode == "multipart" and doc.path is not None)


class _BatchSubmitter:
    """State of one batch: the semaphores, the counters and the per-document steps."""

    def __init__(
        self,
        client: AsyncDocCheckClient,
        ledger: Ledger,
        campaign: str,
        options: SubmitOptions,
        *,
        run_id: str = "",
        total: int,
        attempt: Attempt,
    ) -> None:
        self.client = client
        self.ledger = ledger
        self.campaign = campaign
        self.run_id = run_id
        concurrency, upload_concurrency = options.concurrency, options.upload_concurrency
        self.budget = bind_budget(options.budget, ledger, campaign)  # the cap is the campaign's, in the ledger
        self.on_progress = options.on_progress
        #: Documents in progress (ledger writes + request): more than the requests, so the next
        #: documents' claims and ``sending`` commit while the requests travel (issue 10). Concurrency 1
        #: stays one document at a time: no request leaves while another's answer is unrecorded.
        self.window = asyncio.Semaphore(PIPELINE_DEPTH * concurrency if concurrency > 1 else 1)
        self.result = BatchResult(total=total)
        self.done = 0
        self.deadline_at = options.deadline()
        self.lease_seconds = options.lease_seconds
        self.attempt = attempt  # a retry of this batch in this process: the same owner, claims and new checks
        self.owner = attempt.owner
        self.held: set[str] = set()
        self.settled: set[str] = set()  # keys answered for sure: release also clears the doubt
        self.reconciler = self._walk()
        #: The ledger's calls run on this thread, off the event loop (issue 10).
        self.writer = LedgerWriter()
        #: The requests (``concurrency`` slots held around them only) and the uploads this batch made.
        self.requests = DocumentRequests(
            client,
            ledger,
            self.writer,
            owner=self.owner,
            webhook_url=options.webhook_url,
            concurrency=concurrency,
            upload_concurrency=upload_concurrency,
            on_idle=lambda: self.round.nudge(),
        )
        #: Answers (recorded, their claims released) and claims (+ ``submitting``/``sending`` when
        #: nothing stands between them) by group commit: ONE transaction for every document waiting.
        self.round: GroupCommit[Answer | ClaimRequest, Any] = GroupCommit(
            ledger,
            self.writer,
            # looked up now, on the package: a test counts the rounds, a crash test stops in one, by patching it
            ledger_surface.record_answers_and_claims,
            target=max(1, ROUND_ITEMS_PER_SLOT * concurrency),
            max_wait=ROUND_MAX_WAIT_SECONDS if concurrency > 1 else 0.0,
            idle=lambda: self.requests.in_flight == 0,
        )
        #: ``submitting`` + ``sending`` of the documents that went through reconciliation and the budget.
        self.prepares = GroupCommit(ledger, self.writer, record_prepares)
        self.released: set[str] = set()  # keys whose claim the grouped answer already released
        #: Files whose type the service refused (415), by their key: sent next as their text.
        self.as_text: dict[str, Any] = {}

    async def _db(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        """A ledger call on the writer thread: awaited, so the order of writes is kept."""
        return await self.writer.call(fn, *args, **kwargs)

    def _tick(self) -> None:
        self.done += 1
        report(self.on_progress, self.done, self.result.total, "submit")

    async def _fail(self, doc: Any, code: str, message: str, state: str = "failed") -> None:
        await self._db(
            self.ledger.mark_submit_failed,
            doc.idempotency_key,
            code=code,
            message=message,
            state=state,
            campaign=self.campaign,
            document_id=doc.document_id,
            products=list(doc.products),
            mode=doc.mode,
        )
        if state == "skipped_budget":
            self.result.skipped_budget += 1
        else:
            self.result.failed += 1
            self.result.failures.append(RowFailure(doc.document_id, doc.idempotency_key, code, message))

    async def run_one(self, doc: Any, previous: SubmissionRow | None) -> None:
        """Attempt ``doc`` until it is settled or the submit deadline: transient errors
        (429, 5xx, network) and keys held by another live process are requeued with
        backoff (outside the concurrency slot); only refusals are final failures."""
        try:
            attempt = 0
            while True:
                attempt += 1
                async with self.window:
                    if attempt == 1 and _never_made(previous) and _type_refused(doc):  # learnt since it was planned
                        doc = await self._as_text(doc)
                    delay = await self._attempt(doc, attempt)
                text_doc = self.as_text.pop(doc.idempotency_key, None)
                if text_doc is not None:  # refused as an unsupported type: its text, at once
                    doc, attempt = text_doc, 0
                    continue
                if delay is None:
                    return
                self.result.requeued += 1
                await asyncio.sleep(delay)
        finally:
            self._tick()

    def _past_deadline(self, delay: float) -> bool:
        return time.time() + delay > self.deadline_at

    async def _attempt(self, doc: Any, attempt: int) -> float | None:
        """One try under the key's claim. Returns None when the document is settled (a
        check, a final refusal, or left for a later run), else the seconds to wait."""
        key = doc.idempotency_key
        # Nothing between the claim and ``submitting``/``sending`` (no budget to reserve; a
        # key never recorded needs no reconciliation): all three in the claim's transaction.
        prepare = self._prepare_of(doc) if self.budget is None and _groupable(doc) else None
        claimed = await self.round.record(ClaimRequest(key, self.owner, self.lease_seconds, prepare))
        won, current, prepared = claimed if claimed is not None else (False, None, False)
        if not won:
            if current is not None and current.state == "submitted":
                count_done(self.result, self.attempt, key)  # the other process finished it meanwhile
                return None
            delay = ELSEWHERE_POLICY.backoff(attempt)
            if self._past_deadline(delay):
                self.result.in_flight_elsewhere += 1
                return None
            return delay
        self.held.add(key)
        try:
            # ``current`` was read after the claim was won, in its transaction: fresh
            if current is not None and current.state == "submitted":
                count_done(self.result, self.attempt, key)
                return None
            return await self._submit(doc, current, attempt, prepared=prepared)
        finally:
            self.held.discard(key)
            if key in self.released:
                self.released.discard(key)
            else:
                await self._db(self.ledger.release_claim, key, self.owner, settled=key in self.settled)
            self.settled.discard(key)

    async def _reconcile(self, doc: Any, current: SubmissionRow | None, *, fresh: bool = False) -> str:
        """Settle a key whose earlier request is in doubt before it is sent (see
        :mod:`doccheck.pipeline.sending._reconcile`): ``"adopted"`` (its check found and recorded),
        ``"in_doubt"`` (no lookup could rule a check out: recorded, not sent) or ``"send"``.
        ``fresh``: look up now in a new walk (after a refusal that may be about this key)."""
        if current is None:  # never marked submitting, so never sent: nothing to look up
            return "send"
        doubt = await self._db(self.ledger.doubt, doc.idempotency_key)
        if doubt is None or not (fresh or needs_reconciliation(doubt, self.owner)):
            return "send"
        walk = self._walk() if fresh else self.reconciler
        async with self.requests.slot():  # GET /checks pages: requests like any other
            found = await walk.find(doc.idempotency_key, doubt.first_sent_at, doubt.last_sent_at)
        if found.in_doubt:
            await self._keep_in_doubt(doc, found.reason)
            return "in_doubt"
        if found.check is None:
            return "send"  # positively ruled out: the list was read past its first attempt
        check = found.check
        log.info("adopted check %s of %s found by its reference (an earlier answer was lost)",
                 check.id, doc.document_id)  # fmt: skip
        await self._db(self.ledger.mark_submitted, doc.idempotency_key, check, mode=doc.mode, replayed=True)
        await self._db(self.ledger.settle, doc.idempotency_key)
        self.result.replayed += 1
        self.result.reconciled += 1
        return "adopted"

    def _walk(self) -> Reconciler:
        """A walk of the service's list that asks the ledger which listed checks are ours."""

        async def known_sends(check_ids: list[str]) -> dict[str, Any]:
            sent: dict[str, Any] = await self._db(self.ledger.first_sends_of_checks, check_ids)
            return sent

        return Reconciler(self.client, deadline_at=self.deadline_at, known_sends=known_sends)

    async def _keep_in_doubt(self, doc: Any, reason: str) -> None:
        """Absence of evidence is not evidence: the key is not sent again; the row says why
        and what to do (the claim keeps its doubt, so every later run looks again)."""
        await self._db(
            self.ledger.mark_submit_failed,
            doc.idempotency_key,
            code="in_doubt",
            message=(
                f"an earlier request may have created a check that could not be found or ruled out ({reason}); "
                f"not sent again: look at the account, then `doccheck resolve --campaign {self.campaign}`"
            ),
            state="in_doubt",
            campaign=self.campaign,
            document_id=doc.document_id,
            products=list(doc.products),
            mode=doc.mode,
        )
        self.result.in_doubt += 1

    async def _refusal_in_doubt(
        self, doc: Any, previous: SubmissionRow | None, attempt: int, exc: DocCheckError
    ) -> bool:
        """A create refused 400/409/422 for a key that may already have reached the service
        (a service that refuses key reuse) is looked up, never final: True when the lookup
        settled it (adopted, or kept in doubt); False when it ruled a check out."""
        if exc.status_code not in current_profile().reuse_refusal_statuses:
            return False
        if attempt <= 1 and not exc.after_retry and (previous is None or previous.state in _NEVER_SENT_STATES):
            return False  # this key's first request: the refusal is about the document
        try:
            return await self._reconcile(doc, previous or _SENT, fresh=True) != "send"
        except TRANSIENT_ERRORS as lookup_exc:
            await self._keep_in_doubt(doc, f"the list of checks could not be read: {lookup_exc.code}")
            return True

    async def _requeue(self, doc: Any, exc: DocCheckError, attempt: int) -> float | None:
        """The wait before the next try after a transient error, or None (and the row left
        ``retry_later``) when that try would start after the submit deadline."""
        delay = REQUEUE_POLICY.wait_for(attempt, exc)
        if not self._past_deadline(delay):
            log.debug("requeued %s after %s (attempt %d)", doc.document_id, _error_code(exc), attempt)
            return delay
        await self._db(
            self.ledger.mark_submit_failed,
            doc.idempotency_key,
            code=_error_code(exc),
            message=f"not sent before the submit deadline ({attempt} attempts; last: {exc.message})",
            state="retry_later",
            campaign=self.campaign,
            document_id=doc.document_id,
            products=list(doc.products),
            mode=doc.mode,
        )
        self.result.retry_later += 1
        return None

    def _prepare_of(self, doc: Any) -> Prepare:
        return Prepare(doc.idempotency_key, self.campaign, doc.document_id, tuple(doc.products), doc.mode, self.owner)

    async def _submit(
        self, doc: Any, previous: SubmissionRow | None, attempt: int = 1, *, prepared: bool = False
    ) -> float | None:
        """``prepared``: the claim's transaction already recorded ``submitting`` and
        ``sending`` (a key never recorded, no budget): send at once."""
        try:
            if not prepared and await self._reconcile(doc, previous) != "send":
                return None
        except TRANSIENT_ERRORS as exc:  # the list could not be read: do not send blind
            return await self._requeue(doc, exc, attempt)
        reserved = await self._reserve(doc)
        if reserved is None:
            return None
        grouped = _groupable(doc)
        held = await self._mark_submitting(doc, grouped=grouped, prepared=prepared)
        try:
            if grouped and not held:
                raise ClaimLost(doc.idempotency_key)
            check, upload_id = await self.requests.send(doc, previous.upload_id if previous else None, marked=grouped)
        except Exception as exc:  # noqa: BLE001 - sorted by _not_sent; one odd row never sinks the batch
            if self.budget is not None:
                await self._db(self.budget.release, reserved, doc.idempotency_key)
            return await self._not_sent(doc, previous, exc, attempt)
        await self._record_answer(doc, check, upload_id, reserved)
        return None

    async def _reserve(self, doc: Any) -> int | None:
        """The cents reserved against the budget for ``doc`` (0 without one); None: skipped, over budget."""
        if self.budget is None:
            return 0
        reserved = int(doc.estimated_cost_cents or 0)
        if await self._db(self.budget.reserve, reserved, doc.idempotency_key):
            return reserved
        await self._fail(
            doc,
            "budget_exceeded",
            f"not sent: its estimated {reserved} cents would exceed the budget of {self.budget.max_spend_cents} cents",
            state="skipped_budget",
        )
        return None

    async def _mark_submitting(self, doc: Any, *, grouped: bool, prepared: bool) -> bool | None:
        """Record ``submitting`` before the request; False: another owner holds the claim.

        Text and multipart: "submitting" and "sending" in one grouped commit. ``prepared``:
        written with the claim already."""
        if prepared:
            return True
        if grouped:
            return await self.prepares.record(self._prepare_of(doc))
        await self._db(
            self.ledger.mark_submitting,
            doc.idempotency_key,
            campaign=self.campaign,
            document_id=doc.document_id,
            products=list(doc.products),
            mode=doc.mode,
        )
        return True

    async def _not_sent(self, doc: Any, previous: SubmissionRow | None, exc: Exception, attempt: int) -> float | None:
        """What a failed send means (its budget already released): fatal, again later, or a row's failure."""
        if isinstance(exc, (AuthenticationError, ConfigurationError)):
            raise FatalSubmitError(f"the service refused the credentials: {exc}") from exc
        if isinstance(exc, TRANSIENT_ERRORS):  # may have reached the service: stays in doubt
            return await self._requeue(doc, exc, attempt)
        if isinstance(exc, ClaimLost):
            delay = ELSEWHERE_POLICY.backoff(attempt)
            if self._past_deadline(delay):
                self.result.in_flight_elsewhere += 1
                return None
            return delay
        if isinstance(exc, DocCheckError) and await self._refusal_in_doubt(doc, previous, attempt, exc):
            return None
        if isinstance(exc, DocCheckError) and await self._refused_type(doc, exc):
            return None
        if isinstance(exc, DocCheckError):
            await self._fail(doc, _error_code(exc), exc.message)
            await self._db(self.ledger.settle, doc.idempotency_key)  # a refusal: no check was made
        elif isinstance(exc, OSError):  # the file vanished or became unreadable since planning
            await self._fail(doc, "file_unreadable", f"cannot read {doc.name!r}: {exc.strerror or exc}")
        else:
            log.warning("unexpected error submitting %s", doc.document_id, exc_info=exc)
            await self._fail(doc, "internal_error", f"{type(exc).__name__}: {exc}")
        return None

    async def _refused_type(self, doc: Any, exc: DocCheckError) -> bool:
        """A file refused as an unsupported type (415, or a 422 naming the type) that doccheck
        reads is sent once more as its text, under its own key: nothing was made for the file's
        key (a refusal), the run's documents move to the text key, and this process's profile
        learns the type (the next files of it are planned as text). True when it will be."""
        if doc.mode == "text" or doc.path is None:
            return False
        name = file_name(file_of(doc))
        if not is_supported(name) or not unsupported_type_refusal(exc.status_code, exc.code, exc.message):
            return False
        if learn_refused_type(name):  # kept for the next processes too
            ext = extension_of(name)
            await self._db(remember_refusal, self.ledger, service_of(self.client), ext, current_profile().name)
        await self._db(
            self.ledger.mark_submit_failed,
            doc.idempotency_key,
            code=_error_code(exc),
            message=f"the service does not take this file type ({exc.message}): sent as its text",
            campaign=self.campaign,
            document_id=doc.document_id,
            products=list(doc.products),
            mode=doc.mode,
        )
        await self._db(self.ledger.settle, doc.idempotency_key)  # a refusal: no check was made
        self.as_text[doc.idempotency_key] = await self._as_text(doc)
        return True

    async def _as_text(self, doc: Any) -> Any:
        """``doc`` as its text under its own key, the run's documents moved to that key."""
        text_doc = as_text(doc)
        await self._db(self.ledger.send_as_text, self.run_id, doc.idempotency_key, text_doc.idempotency_key)
        return text_doc

    async def _record_answer(self, doc: Any, check: Check, upload_id: str | None, reserved: int) -> None:
        """The service's answer recorded (the doubt cleared in the same transaction), its charge counted."""
        await self.round.record(Answer(doc.idempotency_key, check, doc.mode, upload_id, self.owner))
        self.released.add(doc.idempotency_key)  # released with the doubt cleared, same transaction
        charge = 0 if check.replayed else int(check.cost.total_cents or 0)
        if self.budget is not None and not check.replayed and charge == 0 and reserved:
            await self._db(self.budget.keep_estimate, reserved, doc.idempotency_key)  # priced later
        elif self.budget is not None:
            await self._db(self.budget.settle, reserved, charge, doc.idempotency_key)
        self.result.cost_cents += charge
        if check.replayed:
            self.result.replayed += 1
        else:
            self.result.submitted += 1
            self.attempt.created[doc.idempotency_key] = charge

    async def renew_claims(self) -> None:
        """Keep this submitter's claims alive while it works (every quarter lease)."""
        while True:
            await asyncio.sleep(self.lease_seconds / 4)
            if not self.held:
                continue
            try:
                await self._db(self.ledger.renew_claims, list(self.held), self.owner, self.lease_seconds)
            except Exception:  # noqa: BLE001 - a database blip: the next round renews (3 more before expiry)
                log.warning("could not renew the claims of this batch; retrying", exc_info=True)


def _never_made(previous: SubmissionRow | None) -> bool:
    """The document's key has made no check: never sent, or refused (a failure is a refusal: no
    check was made). Only such a key may go as its text instead (another key, another check)."""
    return previous is None or (previous.state == SubmissionState.FAILED and previous.check_id is None)


def _type_refused(doc: Any) -> bool:
    """A file of a type this process learnt (or adopted from the ledger) the service refuses, and
    that doccheck reads: it goes as its text at once, without another refusal."""
    if doc.mode == "text" or doc.path is None:
        return False
    name = file_name(file_of(doc))
    return is_supported(name) and not current_profile().accepts_file(name)


async def submit_batch(
    client: AsyncDocCheckClient,
    ledger: Ledger,
    run_id: str,
    documents: Sequence[Any],
    options: SubmitOptions = DEFAULT_SUBMIT,
) -> BatchResult:
    """Submit a batch of ``PlannedDocument`` for the run ``run_id`` (how: ``options``).

    A document whose key already has a check in the ledger is not sent again (a rerun
    makes zero requests for it). Each key is sent only under its claim in the ledger, so
    concurrent runs never send one key at once (a key another live process holds is
    retried until it is settled there). A key whose earlier request may have reached the
    service is reconciled with ``GET /checks`` first. Refusals (402, 409, 413, 415, 422)
    are final row failures and never sink the batch; transient errors (429, 5xx, network,
    after the client's own retries) are requeued with backoff until ``options.deadline_at``
    (epoch seconds; default now + ``DEFAULT_SUBMIT_DEADLINE_SECONDS``), after which the
    row is ``retry_later``. A 401 raises :class:`FatalSubmitError` because every
    document would fail. Documents sharing a key share one check.
    """
    campaign = retry_transient(lambda: ledger.campaign_of(run_id))  # a database blip costs seconds, not the batch
    retry_transient(lambda: adopt_learnt_refusals(ledger, service_of(client)))  # no refusal paid twice
    retry_transient(lambda: record_documents(ledger, run_id, campaign, documents))  # one executemany
    submitted, previous = retry_transient(lambda: previous_submissions(ledger, (d.idempotency_key for d in documents)))
    attempt = begin_attempt(run_id, (d.idempotency_key for d in documents))
    submitter = _BatchSubmitter(client, ledger, campaign, options, run_id=run_id, total=len(documents), attempt=attempt)
    to_send: list[tuple[Any, SubmissionRow | None]] = []
    seen: set[str] = set()
    for doc in documents:
        if doc.idempotency_key in seen or doc.idempotency_key in submitted:
            count_done(submitter.result, attempt, doc.idempotency_key)
            submitter._tick()
            continue
        seen.add(doc.idempotency_key)
        to_send.append((doc, previous.get(doc.idempotency_key)))
    renewer = asyncio.create_task(submitter.renew_claims())
    try:
        with collections_skip_older_objects():
            async with asyncio.TaskGroup() as group:
                for doc, prev in to_send:
                    group.create_task(submitter.run_one(doc, prev))
    except BaseExceptionGroup as eg:
        end_attempt(attempt)  # failed: a retry of this batch in this process takes it over
        raise first_error(eg) from None
    finally:
        renewer.cancel()
        submitter.writer.close()
    return submitter.result
