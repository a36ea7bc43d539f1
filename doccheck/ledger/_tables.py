"""Every SQLModel table of the ledger, in one module (``LEDGER_TABLES`` is what a new ledger creates).

The ledger is the single durable record of what was sent, what the service answered and
what results came back. It is what makes reruns and crash recovery free of double
charges, so every table is keyed the way the flows look things up:

- ``submissions`` by ``idempotency_key`` (UNIQUE): the key is deterministic, so the same
  document in the same campaign always finds its earlier submission;
- ``outcomes`` by ``(check_id, product)`` (UNIQUE): one row per product of a check, written
  by webhook events or by polling, whichever comes first;
- ``webhook_events`` by ``event_id`` (UNIQUE): the receiver stores every delivery once;
- ``contradictions``: deliveries that contradicted a final status, and what the service said;
- ``submission_claims`` by ``idempotency_key``: who may send a key now (:mod:`~doccheck.ledger._claims`);
- ``document_signatures`` and ``cohort_matches``: cohort matching's memory (:mod:`~doccheck.ledger._signatures`);
- ``check_costs``, ``campaign_budgets``, ``budget_holds``: money (:mod:`~doccheck.ledger._money`);
- ``review_dispositions`` by ``(campaign, document_id)``: reviewers' decisions (:mod:`~doccheck.ledger._dispositions`);
- ``document_reads``: what each file was read as; ``refused_types``: the types a service refused;
- ``listed_files`` by ``(campaign, location, identity)``: what a store's file held when read, so an
  unchanged file is planned from the store's listing alone (:mod:`~doccheck.ledger._listed_files`);
- ``pair_passages`` by ``(campaign, left_hash, right_hash, basis)``: the passages a cohort pair's
  two documents share, as the report page shows them (:mod:`~doccheck.ledger._pair_passages`).

Document texts are never stored (student work is sensitive): only content hashes, word
counts and the caller's allowlisted metadata that the reports join back. The one exception is
``pair_passages``: the few bounded excerpts the report page itself publishes, purged with the
campaign like the page.
JSON columns use SQLAlchemy's generic ``JSON`` type, which works on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from doccheck.ledger._sqltypes import table_of


def utcnow() -> datetime:
    """Aware UTC now (SQLModel's datetime columns store and return aware UTC on both engines)."""
    return datetime.now(UTC)


class RunRow(SQLModel, table=True):
    """One invocation of the pipeline over a manifest."""

    __tablename__ = "runs"

    id: str = Field(primary_key=True, max_length=64)
    campaign: str = Field(index=True)
    manifest: str | None = None
    products: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    status: str = "running"  # running | finished | failed
    summary: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class DocumentRow(SQLModel, table=True):
    """A planned (accepted) manifest row of one run; links the run to its submission key."""

    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("run_id", "document_id", name="uq_documents_run_document"),
        # a batch's rows by number (batches.read_batch): a range, not the whole run scanned
        # and sorted for each of a term's 1,000 batches (issue 28; was an index of run_id alone)
        Index("ix_documents_run_row", "run_id", "row_number"),
        Index("ix_documents_key", "idempotency_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: str
    campaign: str
    document_id: str
    row_number: int | None = None
    name: str | None = None
    mode: str | None = None
    content_hash: str | None = None
    size_bytes: int | None = None
    words: int | None = None
    products: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    idempotency_key: str
    estimated_cost_cents: int | None = None
    doc_metadata: dict[str, Any] = Field(default_factory=dict, sa_column=Column("metadata", JSON, nullable=False))


class RejectionRow(SQLModel, table=True):
    """A manifest row refused before anything was sent (costs nothing, always reported)."""

    __tablename__ = "rejections"
    __table_args__ = (Index("ix_rejections_run", "run_id"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str
    row_number: int | None = None
    document_id: str | None = None
    field: str | None = None
    code: str
    reason: str = Field(sa_column=Column(Text, nullable=False))


class SubmissionRow(SQLModel, table=True):
    """The life of one idempotency key at the service.

    ``state``: planned → submitting → (uploading →) submitted, or failed / rejected /
    skipped_budget. ``submitting`` is written BEFORE the request, so a crash between the
    service's answer and the ledger write leaves a row that the resume replays with the
    same key (the service returns the original check at no charge).
    """

    __tablename__ = "submissions"
    __table_args__ = (Index("ix_submissions_campaign_state", "campaign", "state"),)

    id: int | None = Field(default=None, primary_key=True)
    campaign: str
    document_id: str
    idempotency_key: str = Field(unique=True, index=True)
    products: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    mode: str | None = None
    state: str = "planned"
    attempts: int = 0
    upload_id: str | None = None
    check_id: str | None = Field(default=None, index=True)
    cost_cents: int | None = None
    words: int | None = None
    replayed: bool = False
    error_code: str | None = None
    error_message: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    submitted_at: datetime | None = None
    last_polled_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class OutcomeRow(SQLModel, table=True):
    """One product of one check: its status and, once fetched, its results.

    ``event_at`` says a webhook event told us the product finished; ``fetched`` says the
    full result (scores, sources) is in the row. Events carry only a summary, so a
    completed product learnt from an event is fetched once with GET /checks/{id}.
    """

    __tablename__ = "outcomes"
    __table_args__ = (
        UniqueConstraint("check_id", "product", name="uq_outcomes_check_product"),
        Index("ix_outcomes_campaign_status", "campaign", "status"),
    )

    id: int | None = Field(default=None, primary_key=True)
    check_id: str
    product: str
    campaign: str | None = None
    status: str = "processing"  # processing | completed | failed
    fetched: bool = False
    score: float | None = None
    label: str | None = None
    matched_words: int | None = None
    source_count: int | None = None
    sources: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    error_code: str | None = None
    error_message: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    completed_at: datetime | None = None
    raw: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    source: str | None = None  # webhook | poll
    event_at: datetime | None = None
    updated_at: datetime = Field(default_factory=utcnow)


class WebhookEventRow(SQLModel, table=True):
    """A verified webhook delivery, stored once per event id (dedup), applied later."""

    __tablename__ = "webhook_events"
    __table_args__ = (Index("ix_webhook_events_applied", "applied"),)

    id: int | None = Field(default=None, primary_key=True)
    event_id: str = Field(unique=True)
    type: str
    product: str | None = None
    check_id: str | None = Field(default=None, index=True)
    created_at: datetime | None = None
    received_at: datetime = Field(default_factory=utcnow)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    applied: bool = False


class ContradictionRow(SQLModel, table=True):
    """A delivery that contradicted a product's final status (``check.failed`` arriving after
    the retry that completed), kept so the run says so (invariant 11).

    The delivery changes nothing itself: the check is fetched, and what the service said then
    is the product's outcome once fetched after ``detected_at`` (read by
    :mod:`doccheck.ledger._notices`, never written on the poll path). A table of its own so
    that an existing ledger gains it with ``create_all``; it has ``check_id``, so a purge
    reaches it.
    """

    __tablename__ = "contradictions"

    id: int | None = Field(default=None, primary_key=True)
    check_id: str = Field(index=True)
    product: str
    event_id: str | None = None
    held_status: str  # the final status the ledger had
    delivered_status: str  # what the contradicting delivery said
    detected_at: datetime = Field(default_factory=utcnow)


class ClaimRow(SQLModel, table=True):
    """Who may send an idempotency key right now, and whether an earlier send is in doubt.

    A table of its own (not columns of ``submissions``) so that an existing ledger gains it
    with ``create_all`` and no migration. ``owner``/``expires_at`` are the lease (see
    :mod:`doccheck.ledger._claims`); ``first_sent_at`` is when a create-check request for the
    key first left this side; ``in_doubt`` says the last request may have reached the
    service without its answer being recorded (a crash, a timeout, a 5xx), so the key must
    be reconciled before it is sent again; ``sent_by`` is the owner that sent it last.
    """

    __tablename__ = "submission_claims"

    idempotency_key: str = Field(primary_key=True, max_length=200)
    owner: str | None = Field(default=None, max_length=200)
    expires_at: datetime | None = None
    first_sent_at: datetime | None = None
    sent_by: str | None = Field(default=None, max_length=200)
    in_doubt: bool = False
    updated_at: datetime = Field(default_factory=utcnow)


# Cohort matching's memory (doccheck.matching, through doccheck.ledger._signatures).


class DocumentSignatureRow(SQLModel, table=True):
    """Matching's memory of one document of a campaign (never its text)."""

    __tablename__ = "document_signatures"
    __table_args__ = (
        UniqueConstraint("campaign", "document_id", "content_hash", name="uq_signatures_campaign_doc_hash"),
        Index("ix_signatures_campaign_scheme", "campaign", "scheme"),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign: str
    document_id: str
    content_hash: str
    run_id: str  # the run that first stored it
    scheme: str
    words: int = 0
    shingle_count: int = 0
    signature: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    sample: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    shingles: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class ExtractedWordsRow(SQLModel, table=True):
    """A file's word count by the SHA-256 of its bytes, so unchanged files are not extracted again.

    Per campaign (purged with it; ``run_id`` is the run that extracted it): the Idempotency-Key
    and the plan need only the hash and the count (``doccheck.extract.cache``). Never text.
    """

    __tablename__ = "extracted_words"

    campaign: str = Field(primary_key=True)
    content_hash: str = Field(primary_key=True, max_length=64)
    words: int
    run_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class DocumentReadRow(SQLModel, table=True):
    """What a document's file was read as (its bytes' type) and the type its name says (issue 41).

    Per campaign, document and bytes (purged with the campaign or the run that read it): a
    rerun of the same file finds it without reading the file again, and the reports say
    "read as OpenDocument text: the file is named .docx" (:mod:`~doccheck.ledger._document_reads`).
    A table of its own, not columns of ``documents``: an existing ledger gains it on open.
    """

    __tablename__ = "document_reads"
    __table_args__ = (Index("ix_document_reads_hash", "campaign", "content_hash"),)

    campaign: str = Field(primary_key=True)
    document_id: str = Field(primary_key=True)
    content_hash: str = Field(primary_key=True, max_length=64)
    read_as: str  # the type read, an extension: ".odt"
    named_as: str  # the extension of the file's name: ".docx" ("" without one)
    run_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class ListedFileRow(SQLModel, table=True):
    """What reading a file of a store gave, by its location and its listing's identity (ETag and
    size): a rerun from a bucket plans an unchanged file from the listing alone, with no GET or
    HEAD of the file (:mod:`~doccheck.ledger._listed_files`); a file whose bytes were refused
    (a photo, a scan) keeps its code and reason, so its row is refused again unread. Per campaign,
    purged with it or the run that read the file. A table of its own: an existing ledger gains it on open."""

    __tablename__ = "listed_files"

    campaign: str = Field(primary_key=True)
    location: str = Field(primary_key=True)  # doccheck.storage.display(): a URL, never a credential
    identity: str = Field(primary_key=True)  # doccheck.storage.Entry.identity: "etag:<etag>:<size>"
    content_hash: str = Field(max_length=64)
    size: int
    words: int | None = None  # None: a large file sent as it is, not counted
    read_as: str | None = None  # the type its bytes were read as (".odt"), None: not read
    refused_code: str | None = None  # its bytes refused (a photo, a scan): the row's code, None: read
    refused_reason: str | None = Field(default=None, sa_column=Column(Text))  # and the words after its path
    run_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class PairPassagesRow(SQLModel, table=True):
    """The passages two documents of a cohort pair share, as the report page shows them, by the
    SHA-256 of each side's bytes (issue 48): a rerun's page shows an unchanged pair's passages
    without reading both documents again from their store. ``basis`` digests what else the
    passages depend on (the finder's bounds, the extractor, the template text). Per campaign,
    purged with it or the run that found them. A table of its own: an existing ledger gains it on open."""

    __tablename__ = "pair_passages"

    campaign: str = Field(primary_key=True)
    left_hash: str = Field(primary_key=True, max_length=64)
    right_hash: str = Field(primary_key=True, max_length=64)
    basis: str = Field(primary_key=True, max_length=64)
    passages: str = Field(sa_column=Column(Text, nullable=False))  # JSON, what the page shows of the pair
    run_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class RefusedTypeRow(SQLModel, table=True):
    """A file type a service refused as unsupported (a 415, or a 422 naming the type), by the
    service's base URL: the next process sends such files as their text at once, without
    another refusal (:mod:`~doccheck.ledger._refused_types`). Not student data: kept on purge."""

    __tablename__ = "refused_types"

    service: str = Field(primary_key=True)
    extension: str = Field(primary_key=True, max_length=32)
    profile: str | None = None
    refused_at: datetime = Field(default_factory=utcnow)


class CohortMatchRow(SQLModel, table=True):
    """A verified pair found by a run (one row per pair, ``document_id`` is the run's side)."""

    __tablename__ = "cohort_matches"
    __table_args__ = (Index("ix_cohort_matches_run", "run_id"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str
    campaign: str
    document_id: str
    matched_document_id: str
    matched_run_id: str | None = None
    kind: str  # identical | near_duplicate | copied_section
    percent: float | None = None  # overlap, percent of document_id's shingles
    matched_percent: float | None = None  # overlap, percent of matched_document_id's shingles
    matched_words: int | None = None
    jaccard: float | None = None


# Money (doccheck.ledger._money). Why tables of their own (not columns of ``submissions``):
# the service bills a CHECK, and several manifest rows (identical content), several runs and
# several machines can share one check. Keyed by ``check_id``, a charge is stored once however
# many rows point at it, so summing ``check_costs`` is what the service charged. The budget is
# a row per campaign that every process updates with a conditional UPDATE, so a cap holds
# across processes.
class CheckCostRow(SQLModel, table=True):
    """The money of one check, as the service counts it.

    ``charged_cents`` is the create answer's ``cost.total_cents`` (stored the first time the
    check id is seen; a replay returns the same check and adds nothing). ``refunded_cents``
    follows the failed products (events and polls). ``budget_counted`` says the charge was
    added to its campaign's budget row (once, atomically).
    """

    __tablename__ = "check_costs"
    __table_args__ = (Index("ix_check_costs_campaign", "campaign"),)

    check_id: str = Field(primary_key=True)
    campaign: str | None = None
    charged_cents: int = 0
    ai_cents: int = 0
    similarity_cents: int = 0
    refunded_cents: int = 0
    stated_refund_cents: int | None = None
    budget_counted: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class CampaignBudgetRow(SQLModel, table=True):
    """Money committed by a campaign: ``spent_cents`` (charges of its checks, counted once)
    plus ``reserved_cents`` (estimates of requests in flight). A reservation succeeds only
    through ``UPDATE … WHERE spent + reserved + :cents <= :cap``, atomic on both engines."""

    __tablename__ = "campaign_budgets"

    campaign: str = Field(primary_key=True)
    spent_cents: int = 0
    reserved_cents: int = 0
    cap_cents: int | None = None
    updated_at: datetime = Field(default_factory=utcnow)


class BudgetHoldRow(SQLModel, table=True):
    """One reservation in flight, per (campaign, idempotency key): released when the answer
    is recorded or the request is refused; adopted by a resume of the same key; reclaimed
    after a lease when its process died and the key never came back."""

    __tablename__ = "budget_holds"

    campaign: str = Field(primary_key=True)
    idempotency_key: str = Field(primary_key=True)
    cents: int = 0
    held_at: datetime = Field(default_factory=utcnow)


# --- review dispositions (issue 25; doccheck.ledger._dispositions) ---
class DispositionRow(SQLModel, table=True):
    """What a reviewer decided about one document of a campaign: cleared, discussed or referred.

    One row per (campaign, document): a new decision replaces the last. ``idempotency_key``
    and ``content_hash`` name the version that was looked at, so a cleared flag is not raised
    again for that version but is for a changed document. ``note`` is the reviewer's text:
    purged with the campaign (``campaign``) or with the run that alone used the key."""

    __tablename__ = "review_dispositions"
    __table_args__ = (UniqueConstraint("campaign", "document_id", name="uq_dispositions_campaign_document"),)

    id: int | None = Field(default=None, primary_key=True)
    campaign: str
    document_id: str
    idempotency_key: str | None = None
    content_hash: str | None = None
    status: str  # cleared | discussed | referred
    note: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    decided_by: str | None = None
    decided_at: datetime = Field(default_factory=utcnow)


DISPOSITION_TABLES = [table_of(DispositionRow)]
# --- end review dispositions ---

SIGNATURE_TABLES = [table_of(DocumentSignatureRow), table_of(CohortMatchRow)]
MONEY_TABLES = [table_of(CheckCostRow), table_of(CampaignBudgetRow), table_of(BudgetHoldRow)]
LEDGER_TABLES = [
    table_of(RunRow),
    table_of(DocumentRow),
    table_of(RejectionRow),
    table_of(SubmissionRow),
    table_of(OutcomeRow),
    table_of(WebhookEventRow),
    table_of(ContradictionRow),
    table_of(ClaimRow),
    *SIGNATURE_TABLES,
    table_of(ExtractedWordsRow),
    table_of(DocumentReadRow),
    table_of(ListedFileRow),
    table_of(PairPassagesRow),
    table_of(RefusedTypeRow),
    *MONEY_TABLES,
    *DISPOSITION_TABLES,
]
