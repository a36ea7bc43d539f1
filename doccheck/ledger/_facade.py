"""The :class:`Ledger`: every durable fact of the pipeline, behind methods named for what
the flows and the receiver need.

Why methods and not raw sessions for callers: the state machine of a submission (see
:class:`~doccheck.ledger._tables.SubmissionRow`) is what guarantees "at most one billed
check per row", so its transitions live in the ledger, in one place, and are each one short
transaction (safe for the receiver process writing at the same time).

The ledger is functions grouped by table family, each taking the session first (Prefect's
``server/models`` shape), and this facade is their transaction seam: each method opens one
short transaction (``with self.session() as s``), calls the function, and commits.

- :mod:`~doccheck.ledger._run_rows`: runs, their documents and rejections;
- :mod:`~doccheck.ledger._submissions`: the submission state machine;
- :mod:`~doccheck.ledger._claims`: claims on keys in flight, sends in doubt (Core statements on a
  connection: their rowcount is the verdict);
- :mod:`~doccheck.ledger._outcomes`: per-product outcomes, merged by the pure rules of
  :mod:`~doccheck.ledger._merge`;
- :mod:`~doccheck.ledger._webhook_events`: webhook events, stored then applied;
- :mod:`~doccheck.ledger._queries`: pending work, counts, the reference AI scores;
- :mod:`~doccheck.ledger._dispositions`: reviewers' decisions.

The grouped writes and the named reads for the packages above are functions of
:mod:`doccheck.ledger` (``record_answers_and_claims``, ``in_doubt``...). Purge is
:mod:`~doccheck.ledger._data_purge` (functions over the engine, run by ``doccheck purge``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError

from doccheck.ledger import _claims as claims
from doccheck.ledger import _dispositions as dispositions
from doccheck.ledger import _outcomes as outcomes
from doccheck.ledger import _queries as queries
from doccheck.ledger import _run_rows as runs
from doccheck.ledger import _submissions as submissions
from doccheck.ledger import _webhook_events as webhook_events
from doccheck.ledger._base import CheckLike, Database, PlannedLike, dump
from doccheck.ledger._claims import DEFAULT_LEASE_SECONDS, Doubt, owner_is_dead_here
from doccheck.ledger._dispositions import Disposition
from doccheck.ledger._engine import redact_url
from doccheck.ledger._queries import PendingCheck
from doccheck.ledger._report_rows import build_report_rows, summarize
from doccheck.ledger._run_rows import RunMetadata
from doccheck.ledger._statistics import refresh_statistics
from doccheck.ledger._tables import OutcomeRow, RunRow, SubmissionRow, WebhookEventRow, utcnow
from doccheck.sources.manifest import Rejection

if TYPE_CHECKING:
    from doccheck.client import Event

__all__ = ["Ledger"]


class Ledger(Database):
    """The pipeline's durable record (SQLite or PostgreSQL via SQLAlchemy URL).

    The schema is created on first use, so a fresh ``sqlite:///doccheck.db`` just works.
    The ledger never stores document texts, the API key, or a webhook secret.

    Each method is one short transaction around one function of the ledger's modules (a few
    are a fixed sequence of them, said where). They stay methods of the class, not attributes
    forwarded at run time: crash tests patch ``Ledger.mark_submitted``, ``Ledger.send_as_text``
    and ``Ledger.record_documents`` to stop a process between the service's answer and the
    ledger's write, and the type checker sees each signature (a test pins each method's
    parameters to its function's).
    """

    def __repr__(self) -> str:
        return f"Ledger({redact_url(self.database_url)!r})"

    # -- runs ---------------------------------------------------------------------
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
        with self.session() as s:
            return runs.start_run(
                s, campaign=campaign, manifest=manifest, products=products, params=params, run_id=run_id
            )

    def finish_run(self, run_id: str, *, status: str = "finished", summary: Mapping[str, Any] | None = None) -> None:
        """Close a run with its final status and a JSON summary."""
        with self.session() as s:
            runs.finish_run(s, run_id, status=status, summary=summary)

    def get_run(self, run_id: str) -> RunRow | None:
        """The run row, or None."""
        with self.session() as s:
            return runs.get_run(s, run_id)

    def latest_run(self, campaign: str) -> RunRow | None:
        """The most recent run of a campaign (for ``collect_results`` by campaign)."""
        with self.session() as s:
            return runs.latest_run(s, campaign)

    def campaign_of(self, run_id: str) -> str:
        """The campaign of a run (raises KeyError for an unknown run)."""
        with self.session() as s:
            return runs.campaign_of(s, run_id)

    def record_documents(self, run_id: str, documents: Iterable[PlannedLike]) -> int:
        """Record the accepted rows of a run (planning's ``PlannedDocument``); idempotent.
        The run's campaign is read first, then the documents written in their own transaction."""
        campaign = self.campaign_of(run_id)
        with self.session() as s:
            return runs.add_documents(s, run_id, campaign, documents)

    def send_as_text(self, run_id: str, key: str, text_key: str) -> int:
        """Move the run's documents under ``key`` to ``text_key``, sent as their text."""
        with self.session() as s:
            return runs.send_as_text(s, run_id, key, text_key)

    def record_rejections(self, run_id: str, rejections: Iterable[Rejection]) -> int:
        """Record the rows refused before sending (planning's ``Rejection``); idempotent per run."""
        with self.session() as s:
            return runs.add_rejections(s, run_id, rejections)

    def document_metadata(self, run_id: str) -> RunMetadata:
        """``document_id → metadata`` of a run, for joining caller columns into the reports.

        A mapping read from the ledger as it is used (:class:`RunMetadata`, one short transaction
        per read), not a dict of the whole run: a term's 100,000 documents held ~75 MB of dicts
        while the reports were written.
        """
        return RunMetadata(self.session, run_id)

    # -- submissions ----------------------------------------------------------------
    def submission_for_key(self, idempotency_key: str) -> SubmissionRow | None:
        """The submission of a key, whatever its state (None when never seen)."""
        with self.session() as s:
            return submissions.submission_for_key(s, idempotency_key)

    def submissions_for_keys(self, keys: Iterable[str]) -> dict[str, SubmissionRow]:
        """Submissions of many keys at once (the batch pre-check of a rerun)."""
        with self.session() as s:
            return submissions.submissions_for_keys(s, keys)

    def mark_submitting(
        self, idempotency_key: str, *, campaign: str, document_id: str, products: Sequence[str], mode: str | None
    ) -> None:
        """Write the intent BEFORE the request: a crash after the service answered leaves this row in ``submitting``, and the resume sends the same key again (a free replay)."""
        with self.session() as s:
            submissions.mark_submitting(
                s, idempotency_key, campaign=campaign, document_id=document_id, products=products, mode=mode
            )

    def mark_upload_created(self, idempotency_key: str, upload_id: str) -> None:
        """Remember the upload id before the bytes are sent, so a resume can create the check from it (or replay) instead of taking another of the 50 waiting slots."""
        with self.session() as s:
            submissions.mark_upload_created(s, idempotency_key, upload_id)

    def mark_submitted(
        self,
        idempotency_key: str,
        check: CheckLike,
        *,
        mode: str | None = None,
        upload_id: str | None = None,
        replayed: bool | None = None,
    ) -> None:
        """Record the service's check and one ``processing`` outcome per product.

        Three transactions, in this order: the key's row is read; the outcomes are written (a
        bulk insert when the check is fresh, else, or when another process created them
        meanwhile, the general merge); then the ``submitted`` row and its charge. A crash in
        between leaves outcomes and a ``submitting`` row, which the resume replays; the reverse
        order could leave a submitted check without outcomes, which nobody would poll.
        """
        data = dump(check)
        with self.session() as s:
            before = submissions.submission_before(s, idempotency_key)
        campaign = before.campaign if before is not None else None
        try:
            with self.session() as s:
                inserted = outcomes.insert_fresh(s, data, campaign)
        except IntegrityError:
            inserted = False  # created concurrently: merge below
        if not inserted:
            with self.session() as s:
                outcomes.apply_check(s, data, source="poll", campaign=campaign)  # learnt from the API answer
        was_replayed = bool(getattr(check, "replayed", False) if replayed is None else replayed)
        with self.session() as s:
            submissions.record_submitted(
                s, idempotency_key, data, before, replayed=was_replayed, mode=mode, upload_id=upload_id
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
        """A row-level failure (or ``skipped_budget``): reported, and retried by a rerun.
        Tried twice: a row inserted by another process meanwhile is then updated."""
        for attempt in range(2):
            try:
                with self.session() as s:
                    submissions.mark_submit_failed(
                        s,
                        idempotency_key,
                        code=code,
                        message=message,
                        state=state,
                        campaign=campaign,
                        document_id=document_id,
                        products=products,
                        mode=mode,
                    )
                return
            except IntegrityError:
                if attempt:
                    raise

    def mark_polled(self, check_ids: Iterable[str]) -> None:
        """Remember when checks were last polled (spaces out the polling fallback)."""
        with self.session() as s:  # no statement, no transaction: nothing to poll costs nothing
            submissions.mark_polled(s, check_ids)

    # -- claims (Core statements on a connection: see doccheck.ledger._claims) -------
    def claim(self, key: str, owner: str, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> bool:
        """Take (or keep) ``key`` for ``owner``; False while another live owner holds it.

        Up to four transactions, each a compare-and-set or a read: take an existing row that is
        free, ``owner``'s or expired; else insert the key's first claim (the primary key makes
        a concurrent insert fail, and on PostgreSQL a failed statement ends its transaction:
        hence its own); else, when the holder ran on this host and its process is gone, take
        the key from it by a compare-and-set on its id.
        """
        now = utcnow()
        expires = now + timedelta(seconds=lease_seconds)
        with self.engine.begin() as conn:
            if claims.take(conn, key, owner, now, expires):
                return True
        try:
            with self.engine.begin() as conn:
                claims.add(conn, key, owner, now, expires)
            return True
        except IntegrityError:  # the row exists: another owner holds it (or won the insert race)
            pass
        with self.engine.connect() as conn:
            held_by = claims.holder(conn, key)
        if not held_by or held_by == owner or not owner_is_dead_here(held_by):
            return False
        with self.engine.begin() as conn:
            return claims.take_from(conn, key, held_by, owner, expires)

    def renew_claims(self, keys: Iterable[str], owner: str, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> int:
        """Extend ``owner``'s claims on ``keys``; returns how many it still holds."""
        keys = list(keys)
        if not keys:
            return 0
        with self.engine.begin() as conn:
            return claims.renew(conn, keys, owner, lease_seconds)

    def release_claim(self, key: str, owner: str, *, settled: bool = False) -> None:
        """Give ``key`` back (only if ``owner`` still holds it); ``settled`` also clears its doubt."""
        with self.engine.begin() as conn:
            claims.release(conn, key, owner, settled=settled)

    def mark_sending(self, key: str, owner: str) -> bool:
        """Write, BEFORE a create-check request, that it may reach the service; False when
        ``owner`` no longer holds the claim (then it must not send)."""
        with self.engine.begin() as conn:
            return claims.mark_sending(conn, key, owner)

    def settle(self, key: str) -> None:
        """The service answered for sure (a check, or a refusal): nothing left in doubt."""
        with self.engine.begin() as conn:
            claims.settle(conn, key)

    def doubt(self, key: str) -> Doubt | None:
        """Whether an earlier request for ``key`` may have reached the service unrecorded."""
        with self.engine.connect() as conn:
            return claims.doubt(conn, key)

    def first_sends_of_checks(self, check_ids: Iterable[str]) -> dict[str, datetime]:
        """``check id → when its key's request first left this side``, for the checks the ledger knows."""
        ids = sorted(set(check_ids))
        if not ids:
            return {}
        with self.engine.connect() as conn:
            return claims.first_sends_of_checks(conn, ids)

    def claim_holders(self, keys: Iterable[str]) -> dict[str, str]:
        """``key → owner`` for the keys currently held by a live owner (reports, tests)."""
        with self.engine.connect() as conn:
            return claims.holders(conn, list(keys))

    # -- outcomes -------------------------------------------------------------------
    def record_check(self, check: CheckLike, source: str = "poll") -> int:
        """Store a check fetched with GET /checks/{id}; returns how many products changed."""
        with self.session() as s:
            return outcomes.record_check(s, check, source)

    # -- webhook events ---------------------------------------------------------------
    def record_event(self, event: Event, raw: bytes) -> bool:
        """Store a verified delivery once; False for a duplicate event id."""
        return self.record_events([(event, raw)])[0]

    def record_events(self, deliveries: Sequence[tuple[Event, bytes]]) -> list[bool]:
        """Store verified deliveries in one transaction; True for each stored, False for a duplicate."""
        with self.session() as s:
            return webhook_events.record_events(s, deliveries)

    def apply_pending_events(self, limit: int | None = None, *, chunk: int = 200) -> int:
        """Turn stored, not yet applied events into outcomes; returns how many were applied.
        One short transaction per ``chunk`` events: the receiver keeps inserting meanwhile."""
        applied = 0
        while limit is None or applied < limit:
            size = chunk if limit is None else min(chunk, limit - applied)
            with self.session() as s:
                done = webhook_events.apply_events(s, size)
            applied += done
            if done < size:
                break
        return applied

    def unapplied_event_count(self) -> int:
        """How many stored events wait to be applied."""
        with self.session() as s:
            return webhook_events.unapplied_event_count(s)

    def events(self, check_id: str | None = None) -> list[WebhookEventRow]:
        """Stored events (all, or of one check), oldest first."""
        with self.session() as s:
            return webhook_events.stored_events(s, check_id)

    # -- queries --------------------------------------------------------------------
    def pending_outcomes(self, *, run_id: str | None = None, campaign: str | None = None) -> list[OutcomeRow]:
        """Outcomes without a final, fetched result (processing, or finished per an event but not fetched yet), for the submitted checks of a run or a campaign."""
        with self.session() as s:
            return queries.pending_outcomes(s, run_id=run_id, campaign=campaign)

    def outcome_counts(self, *, run_id: str | None = None, campaign: str | None = None) -> dict[str, int]:
        """``{"total", "completed", "failed", "pending"}`` over the products of the submitted checks of a run or campaign, in one aggregate query (cheap enough for every poll round of a 10,000-document run)."""
        with self.session() as s:
            return queries.outcome_counts(s, run_id=run_id, campaign=campaign)

    def pending_checks(self, *, run_id: str | None = None, campaign: str | None = None) -> list[PendingCheck]:
        """Pending outcomes grouped by check, with what polling needs to decide."""
        with self.session() as s:
            return queries.pending_checks(s, run_id=run_id, campaign=campaign)

    def report_rows(self, *, run_id: str | None = None, campaign: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """The report tables as lists of row dicts (see :mod:`doccheck.ledger._report_rows`; a
        short transaction per chunk of documents)."""
        return build_report_rows(self, run_id=run_id, campaign=campaign)

    def run_summary(self, run_id: str) -> dict[str, Any]:
        """Counts of a run: documents, rejected, per submission state, per product status, cost.

        The planner's statistics are brought up to date first (``refresh_statistics``): the
        summary, the reports and the digest that follow read the rows the run just wrote."""
        refresh_statistics(self.engine)
        with self.session() as s:
            return summarize(s, run_id)

    def ai_scores(self, campaign: str, *, min_words: int = 0) -> list[float]:
        """A campaign's completed AI scores (texts of at least ``min_words``): a reference of known-human work."""
        with self.session() as s:
            return queries.ai_scores(s, campaign, min_words=min_words)

    # -- reviewers' dispositions ------------------------------------------------------
    def set_disposition(
        self, campaign: str, document_id: str, status: str, *, note: str | None = None, decided_by: str | None = None
    ) -> Disposition:
        """Record a reviewer's ``status`` for the document's latest version in the campaign."""
        with self.session() as s:
            return dispositions.set_disposition(s, campaign, document_id, status, note=note, decided_by=decided_by)

    def has_dispositions(self, run_id: str) -> bool:
        """Whether the run's campaign has any reviewer's decision at all."""
        with self.session() as s:
            return dispositions.has_dispositions(s, run_id)

    def dispositions_of_run(self, run_id: str, document_ids: Sequence[str] | None = None) -> dict[str, Disposition]:
        """document_id → the reviewer's decision about it (only of ``document_ids`` when given)."""
        with self.session() as s:
            return dispositions.dispositions_of_run(s, run_id, document_ids)
