"""The :class:`Ledger`: every durable fact of the pipeline, behind methods named for what
the flows and the receiver need.

Why methods and not raw sessions for callers: the state machine of a submission (see
:class:`~doccheck.ledger._tables.SubmissionRow`) is what guarantees "at most one billed
check per row", so its transitions live here, in one place, and are each one short
transaction (safe for the receiver process writing at the same time).

The facade composes one object per job, each in its own module and each receiving the
:class:`~doccheck.ledger._base.Database` (engine and ``session()``), never the facade:

- ``Ledger.runs`` (:mod:`~doccheck.ledger._run_rows`): runs, their documents and rejections;
- ``Ledger.submissions`` (:mod:`~doccheck.ledger._submissions`): the submission state machine;
- ``Ledger.claims`` (:mod:`~doccheck.ledger._claims`): claims on keys in flight, sends in doubt;
- ``Ledger.outcomes`` (:mod:`~doccheck.ledger._outcomes`): per-product outcomes, merged by the
  pure rules of :mod:`~doccheck.ledger._merge`;
- ``Ledger.webhook_events`` (:mod:`~doccheck.ledger._webhook_events`): webhook events, stored then applied;
- ``Ledger.queries`` (:mod:`~doccheck.ledger._queries`): pending work, counts, reports, summaries.

What the facade keeps, and why, is said in :class:`Ledger`'s docstring. Purge is
:mod:`~doccheck.ledger._data_purge` (functions over the engine, run by ``doccheck purge``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from doccheck.ledger._base import Database
from doccheck.ledger._claims import Claims
from doccheck.ledger._dispositions import Dispositions
from doccheck.ledger._engine import redact_url
from doccheck.ledger._outcomes import Outcomes
from doccheck.ledger._queries import PendingCheck, Queries
from doccheck.ledger._run_rows import RunMetadata, Runs
from doccheck.ledger._submissions import Submissions
from doccheck.ledger._tables import OutcomeRow, RunRow, SubmissionRow, WebhookEventRow
from doccheck.ledger._webhook_events import Events

__all__ = ["Ledger"]


class Ledger(Database):
    """The pipeline's durable record (SQLite or PostgreSQL via SQLAlchemy URL).

    The schema is created on first use, so a fresh ``sqlite:///doccheck.db`` just works.
    The ledger never stores document texts, the API key, or a webhook secret.

    What stays on the facade, and why: one delegate per public method of the runs, the
    submissions, the webhook events and the queries (each one short transaction in its part),
    because each has callers that hold a ``Ledger``: the pipeline, the receiver, the outputs,
    the commands, benchmarks or tests (every one had a caller when the facade was trimmed,
    issue 42; a delegate nobody calls goes, with its part's method). They stay methods of the
    class, not attributes forwarded at run time: crash tests patch ``Ledger.mark_submitted``,
    ``Ledger.send_as_text`` and ``Ledger.record_documents`` to stop a process between the
    service's answer and the ledger's write, and the type checker sees each signature (a test
    pins each delegate's parameters to its part's). Of the outcomes only :meth:`record_check`
    is here; the claims and the reviewers' dispositions are reached through their part
    (``ledger.claims``, ``ledger.dispositions``), and the grouped writes and named reads are
    functions of :mod:`doccheck.ledger` taking the ledger or a session first
    (``record_answers_and_claims``, ``in_doubt``...).
    """

    def __init__(self, database_url: str) -> None:
        super().__init__(database_url)
        self.queries = Queries(self)
        self.runs = Runs(self, summarize=self.queries.summary_in)
        self.outcomes = Outcomes(self)
        self.submissions = Submissions(self, self.outcomes)
        self.webhook_events = Events(self, self.outcomes)
        #: Ownership of keys in flight and sends in doubt (:mod:`doccheck.ledger._claims`).
        self.claims = Claims(self.engine)
        #: Reviewers' decisions about flagged documents (:mod:`doccheck.ledger._dispositions`).
        self.dispositions = Dispositions(self)

    def __repr__(self) -> str:
        return f"Ledger({redact_url(self.database_url)!r})"

    # -- runs (Runs) --------------------------------------------------------------
    def start_run(
        self,
        *,
        campaign: str,
        manifest: str | None = None,
        products: Sequence[str] = (),
        params: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> str:
        """Record the start of a run and return its id (a UUID unless given)."""
        return self.runs.start_run(
            campaign=campaign, manifest=manifest, products=products, params=params, run_id=run_id
        )

    def finish_run(self, run_id: str, *, status: str = "finished", summary: Mapping[str, Any] | None = None) -> None:
        """Close a run with its final status and a JSON summary."""
        return self.runs.finish_run(run_id, status=status, summary=summary)

    def get_run(self, run_id: str) -> RunRow | None:
        """The run row, or None."""
        return self.runs.get_run(run_id)

    def latest_run(self, campaign: str) -> RunRow | None:
        """The most recent run of a campaign (for ``collect_results`` by campaign)."""
        return self.runs.latest_run(campaign)

    def campaign_of(self, run_id: str) -> str:
        """The campaign of a run (raises KeyError for an unknown run)."""
        return self.runs.campaign_of(run_id)

    def record_documents(self, run_id: str, documents: Iterable[Any]) -> int:
        """Record the accepted rows of a run (planning's ``PlannedDocument``); idempotent."""
        return self.runs.record_documents(run_id, documents)

    def send_as_text(self, run_id: str, key: str, text_key: str) -> int:
        """Move the run's documents under ``key`` to ``text_key``, sent as their text."""
        return self.runs.send_as_text(run_id, key, text_key)

    def record_rejections(self, run_id: str, rejections: Iterable[Any]) -> int:
        """Record the rows refused before sending (planning's ``Rejection``); idempotent per run."""
        return self.runs.record_rejections(run_id, rejections)

    def document_metadata(self, run_id: str) -> RunMetadata:
        """``document_id → metadata`` of a run, for joining caller columns into the reports."""
        return self.runs.document_metadata(run_id)

    # -- submissions (Submissions) ------------------------------------------------
    def submission_for_key(self, idempotency_key: str) -> SubmissionRow | None:
        """The submission of a key, whatever its state (None when never seen)."""
        return self.submissions.submission_for_key(idempotency_key)

    def submissions_for_keys(self, keys: Iterable[str]) -> dict[str, SubmissionRow]:
        """Submissions of many keys at once (the batch pre-check of a rerun)."""
        return self.submissions.submissions_for_keys(keys)

    def mark_submitting(
        self, idempotency_key: str, *, campaign: str, document_id: str, products: Sequence[str], mode: str | None
    ) -> None:
        """Write the intent BEFORE the request: a crash after the service answered leaves this row in ``submitting``, and the resume sends the same key again (a free replay)."""
        return self.submissions.mark_submitting(
            idempotency_key, campaign=campaign, document_id=document_id, products=products, mode=mode
        )

    def mark_upload_created(self, idempotency_key: str, upload_id: str) -> None:
        """Remember the upload id before the bytes are sent, so a resume can create the check from it (or replay) instead of taking another of the 50 waiting slots."""
        return self.submissions.mark_upload_created(idempotency_key, upload_id)

    def mark_submitted(
        self,
        idempotency_key: str,
        check: Any,
        *,
        mode: str | None = None,
        upload_id: str | None = None,
        replayed: bool | None = None,
    ) -> None:
        """Record the service's check and one ``processing`` outcome per product."""
        return self.submissions.mark_submitted(
            idempotency_key, check, mode=mode, upload_id=upload_id, replayed=replayed
        )

    def mark_submit_failed(
        self,
        idempotency_key: str,
        *,
        code: str | None,
        message: str | None,
        state: str = "failed",
        campaign: str | None = None,
        document_id: str | None = None,
        products: Sequence[str] | None = None,
        mode: str | None = None,
    ) -> None:
        """A row-level failure (or ``skipped_budget``): reported, and retried by a rerun."""
        return self.submissions.mark_submit_failed(
            idempotency_key,
            code=code,
            message=message,
            state=state,
            campaign=campaign,
            document_id=document_id,
            products=products,
            mode=mode,
        )

    def mark_polled(self, check_ids: Iterable[str]) -> None:
        """Remember when checks were last polled (spaces out the polling fallback)."""
        return self.submissions.mark_polled(check_ids)

    # -- outcomes (Outcomes) ------------------------------------------------------
    def record_check(self, check: Any, source: str = "poll") -> int:
        """Store a check fetched with GET /checks/{id}; returns how many products changed."""
        return self.outcomes.record_check(check, source)

    # -- events (Events) ----------------------------------------------------------
    def record_event(self, event: Any, raw: bytes) -> bool:
        """Store a verified delivery once."""
        return self.webhook_events.record_event(event, raw)

    def record_events(self, deliveries: Sequence[tuple[Any, bytes]]) -> list[bool]:
        """Store verified deliveries in one transaction; True for each stored, False for a duplicate."""
        return self.webhook_events.record_events(deliveries)

    def apply_pending_events(self, limit: int | None = None, *, chunk: int = 200) -> int:
        """Turn stored, not yet applied events into outcomes; returns how many were applied."""
        return self.webhook_events.apply_pending_events(limit, chunk=chunk)

    def unapplied_event_count(self) -> int:
        """How many stored events wait to be applied."""
        return self.webhook_events.unapplied_event_count()

    def events(self, check_id: str | None = None) -> list[WebhookEventRow]:
        """Stored events (all, or of one check), oldest first."""
        return self.webhook_events.events(check_id)

    # -- queries (Queries) --------------------------------------------------------
    def pending_outcomes(self, *, run_id: str | None = None, campaign: str | None = None) -> list[OutcomeRow]:
        """Outcomes without a final, fetched result (processing, or finished per an event but not fetched yet), for the submitted checks of a run or a campaign."""
        return self.queries.pending_outcomes(run_id=run_id, campaign=campaign)

    def outcome_counts(self, *, run_id: str | None = None, campaign: str | None = None) -> dict[str, int]:
        """``{"total", "completed", "failed", "pending"}`` over the products of the submitted checks of a run or campaign, in one aggregate query (cheap enough for every poll round of a 10,000-document run)."""
        return self.queries.outcome_counts(run_id=run_id, campaign=campaign)

    def pending_checks(self, *, run_id: str | None = None, campaign: str | None = None) -> list[PendingCheck]:
        """Pending outcomes grouped by check, with what polling needs to decide."""
        return self.queries.pending_checks(run_id=run_id, campaign=campaign)

    def report_rows(self, *, run_id: str | None = None, campaign: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """The four report tables as lists of row dicts (see :mod:`doccheck.ledger._report_rows`)."""
        return self.queries.report_rows(run_id=run_id, campaign=campaign)

    def run_summary(self, run_id: str) -> dict[str, Any]:
        """Counts of a run: documents, rejected, per submission state, per product status, cost."""
        return self.queries.run_summary(run_id)

    def ai_scores(self, campaign: str, *, min_words: int = 0) -> list[float]:
        """A campaign's completed AI scores (texts of at least ``min_words``): a reference of known-human work."""
        return self.queries.ai_scores(campaign, min_words=min_words)
