"""``submit_batch``: send a batch of planned documents, at most once per Idempotency-Key.

The order of writes is what makes crashes harmless: the ledger says ``submitting``
BEFORE the request and ``submitted`` after it, and the key is deterministic. Whatever
point a run dies at, the resume either finds ``submitted`` (nothing to do) or sends the
same key again, which the service answers with the original check and no charge.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from doccheck.client import (
    AsyncDocCheckClient,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    DocCheckError,
    FileDocument,
    NotFoundError,
    TextDocument,
    plan_document,
)
from doccheck.client.models import Check
from doccheck.ledger import Ledger, SubmissionRow
from doccheck.pipeline.budget import Budget
from doccheck.pipeline.campaign_budget import bind_budget
from doccheck.pipeline.progress import ProgressCallback, report

log = logging.getLogger(__name__)

#: Upload-mode documents in flight at once. Each holds one of the account's 50
#: waiting-upload slots between POST /uploads and POST /checks; staying far below 50
#: leaves room for other runs and for uploads leaked by crashes (freed after 24 h).
DEFAULT_UPLOAD_CONCURRENCY = 4

#: Codes by which a stored upload_id can no longer make a check: start a fresh upload.
_STALE_UPLOAD_CODES = {"upload_not_found", "upload_incomplete", "upload_consumed"}


class FatalSubmitError(RuntimeError):
    """A configuration problem that would fail every document (401): the batch stops."""


@dataclass(frozen=True)
class RowFailure:
    """One document the service (or the local pre-check) refused, with the reason."""

    document_id: str
    idempotency_key: str
    code: str
    message: str


@dataclass
class BatchResult:
    """What one ``submit_batch`` call did.

    ``submitted``: new checks created now; ``replayed``: the service returned an earlier
    check for the key (resume after a crash: no charge); ``already_done``: the ledger
    already held the check, no request at all; ``failed`` and ``skipped_budget`` are
    rows left without a check (reported, retried by a rerun).
    """

    total: int = 0
    submitted: int = 0
    replayed: int = 0
    already_done: int = 0
    failed: int = 0
    skipped_budget: int = 0
    cost_cents: int = 0
    failures: list[RowFailure] = field(default_factory=list)

    def merge(self, other: BatchResult) -> BatchResult:
        """Sum of two results (the flow adds up its batches)."""
        return BatchResult(
            total=self.total + other.total,
            submitted=self.submitted + other.submitted,
            replayed=self.replayed + other.replayed,
            already_done=self.already_done + other.already_done,
            failed=self.failed + other.failed,
            skipped_budget=self.skipped_budget + other.skipped_budget,
            cost_cents=self.cost_cents + other.cost_cents,
            failures=[*self.failures, *other.failures],
        )


def _error_code(exc: DocCheckError) -> str:
    return exc.code or (f"http_{exc.status_code}" if exc.status_code else type(exc).__name__)


class _BatchSubmitter:
    """State of one batch: the semaphores, the counters and the per-document steps."""

    def __init__(
        self,
        client: AsyncDocCheckClient,
        ledger: Ledger,
        campaign: str,
        *,
        concurrency: int,
        upload_concurrency: int,
        webhook_url: str | None,
        budget: Budget | None,
        on_progress: ProgressCallback | None,
        total: int,
    ) -> None:
        self.client = client
        self.ledger = ledger
        self.campaign = campaign
        self.webhook_url = webhook_url
        self.budget = bind_budget(budget, ledger, campaign)  # the cap is the campaign's, in the ledger
        self.on_progress = on_progress
        self.sem = asyncio.Semaphore(max(1, concurrency))
        self.upload_sem = asyncio.Semaphore(max(1, min(upload_concurrency, concurrency)))
        self.result = BatchResult(total=total)
        self.done = 0

    def _tick(self) -> None:
        self.done += 1
        report(self.on_progress, self.done, self.result.total, "submit")

    def _fail(self, doc: Any, code: str, message: str, state: str = "failed") -> None:
        self.ledger.mark_submit_failed(
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
        try:
            async with self.sem:
                await self._submit(doc, previous)
        finally:
            self._tick()

    async def _submit(self, doc: Any, previous: SubmissionRow | None) -> None:
        reserved = 0
        if self.budget is not None:
            reserved = int(doc.estimated_cost_cents or 0)
            if not self.budget.reserve(reserved, doc.idempotency_key):
                self._fail(
                    doc,
                    "budget_exceeded",
                    f"not sent: its estimated {reserved} cents would exceed the budget of "
                    f"{self.budget.max_spend_cents} cents",
                    state="skipped_budget",
                )
                return
        self.ledger.mark_submitting(
            doc.idempotency_key,
            campaign=self.campaign,
            document_id=doc.document_id,
            products=list(doc.products),
            mode=doc.mode,
        )
        try:
            check, upload_id = await self._send(doc, previous.upload_id if previous else None)
        except (AuthenticationError, ConfigurationError) as exc:
            if self.budget is not None:
                self.budget.release(reserved, doc.idempotency_key)
            raise FatalSubmitError(f"the service refused the credentials: {exc}") from exc
        except DocCheckError as exc:
            if self.budget is not None:
                self.budget.release(reserved, doc.idempotency_key)
            self._fail(doc, _error_code(exc), exc.message)
            return
        except OSError as exc:  # the file vanished or became unreadable since planning
            if self.budget is not None:
                self.budget.release(reserved, doc.idempotency_key)
            self._fail(doc, "file_unreadable", f"cannot read {doc.name!r}: {exc.strerror or exc}")
            return
        except Exception as exc:  # noqa: BLE001 - one odd row never sinks the batch
            if self.budget is not None:
                self.budget.release(reserved, doc.idempotency_key)
            log.warning("unexpected error submitting %s", doc.document_id, exc_info=True)
            self._fail(doc, "internal_error", f"{type(exc).__name__}: {exc}")
            return
        self.ledger.mark_submitted(doc.idempotency_key, check, mode=doc.mode, upload_id=upload_id)
        charge = 0 if check.replayed else int(check.cost.total_cents or 0)
        if self.budget is not None:
            self.budget.settle(reserved, charge, doc.idempotency_key)
        self.result.cost_cents += charge
        if check.replayed:
            self.result.replayed += 1
        else:
            self.result.submitted += 1

    def _common(self, doc: Any) -> dict[str, Any]:
        return {
            "products": list(doc.products),
            "name": doc.name,
            "metadata": dict(doc.metadata or {}),
            "webhook_url": self.webhook_url,
            "idempotency_key": doc.idempotency_key,
        }

    async def _send(self, doc: Any, previous_upload_id: str | None) -> tuple[Check, str | None]:
        if doc.mode == "text":
            if doc.text is None:
                raise DocCheckError("a text-mode document has no text", code="invalid_input")
            sub = await self.client.submit(TextDocument(doc.text), **self._common(doc))
            return sub.check, None
        if doc.path is None:
            raise DocCheckError(f"a {doc.mode}-mode document has no path", code="invalid_input")
        if doc.mode == "multipart":
            sub = await self.client.submit(FileDocument(Path(doc.path)), **self._common(doc))
            return sub.check, sub.upload_id
        return await self._send_upload(doc, previous_upload_id)

    async def _send_upload(self, doc: Any, previous_upload_id: str | None) -> tuple[Check, str | None]:
        """The upload flow step by step, so the upload id is in the ledger before the bytes
        travel: a resume first tries that upload (the service replays the key if the check
        exists) instead of taking another waiting-upload slot."""
        common = self._common(doc)
        if previous_upload_id:
            try:
                check = await self.client.create_check(upload_id=previous_upload_id, **common)
                return check, previous_upload_id
            except (NotFoundError, ConflictError) as exc:
                if exc.code not in _STALE_UPLOAD_CODES:
                    raise
                log.debug("stored upload of %s is unusable (%s); uploading again", doc.document_id, exc.code)
        path = Path(doc.path)
        plan = plan_document(FileDocument(path))  # local refusal before taking a slot
        async with self.upload_sem:
            upload = await self.client.create_upload(path.name, content_type=plan.content_type, size_bytes=plan.size)
            self.ledger.mark_upload_created(doc.idempotency_key, upload.upload_id)
            await self.client.put_upload(upload, path)
            check = await self.client.create_check(upload_id=upload.upload_id, **common)
        return check, upload.upload_id


async def submit_batch(
    client: AsyncDocCheckClient,
    ledger: Ledger,
    run_id: str,
    documents: Sequence[Any],
    *,
    concurrency: int = 8,
    upload_concurrency: int = DEFAULT_UPLOAD_CONCURRENCY,
    webhook_url: str | None = None,
    budget: Budget | None = None,
    on_progress: ProgressCallback | None = None,
) -> BatchResult:
    """Submit a batch of ``PlannedDocument`` for the run ``run_id``.

    A document whose key already has a check in the ledger is not sent again (a rerun
    makes zero requests for it). Row-level refusals (402, 409, 413, 415, 422, network
    errors after the client's retries) are recorded per document and never sink the
    batch; a 401 raises :class:`FatalSubmitError` because every document would fail.
    Documents sharing a key (same content, products and campaign) share one check.
    """
    campaign = ledger.campaign_of(run_id)
    ledger.record_documents(run_id, documents)
    previous = ledger.submissions_for_keys(d.idempotency_key for d in documents)
    submitter = _BatchSubmitter(
        client,
        ledger,
        campaign,
        concurrency=concurrency,
        upload_concurrency=upload_concurrency,
        webhook_url=webhook_url,
        budget=budget,
        on_progress=on_progress,
        total=len(documents),
    )
    to_send: list[tuple[Any, SubmissionRow | None]] = []
    seen: set[str] = set()
    for doc in documents:
        prev = previous.get(doc.idempotency_key)
        if doc.idempotency_key in seen or (prev is not None and prev.state == "submitted"):
            submitter.result.already_done += 1
            submitter._tick()
            continue
        seen.add(doc.idempotency_key)
        to_send.append((doc, prev))
    try:
        async with asyncio.TaskGroup() as group:
            for doc, prev in to_send:
                group.create_task(submitter.run_one(doc, prev))
    except BaseExceptionGroup as eg:
        raise first_error(eg) from None
    return submitter.result


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The error to raise from a task group: a fatal one if any, else the first.

    Callers (Prefect retry conditions, the CLI) branch on the exception class, which an
    ``ExceptionGroup`` wrapper would hide.
    """
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup) -> None:
        for e in g.exceptions:
            if isinstance(e, BaseExceptionGroup):
                walk(e)
            else:
                leaves.append(e)

    walk(group)
    for exc in leaves:
        if isinstance(exc, (FatalSubmitError, AuthenticationError)):
            return exc
    return leaves[0] if leaves else group
