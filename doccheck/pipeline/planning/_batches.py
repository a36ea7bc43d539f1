"""A real run's manifest in batches: recorded once as it streams by, re-read one batch at a time.

Why: a :class:`~doccheck.pipeline.planning._plan.Plan` holds every document with its text, and the real run
kept one for the whole run and passed lists of documents as task parameters, so a 20,000-row
term grew with its texts (issue 10). Here the manifest is read ONCE by :func:`record_plan`:
each row is validated and planned, and what the reports need (documents without their text,
rejections) goes to the ledger in one transaction per batch. What stays in memory is a
:class:`~doccheck.pipeline.planning._plan_stream.PlanTally` and a list of :class:`BatchRef` — a few integers per
batch (rows, count, byte offset), small and JSON-serialisable, safe as a Prefect task
parameter. :func:`load_batch` later seeks to one batch, re-reads and re-plans only its rows and
returns the documents the ledger recorded for them (with their texts, for ``submit_batch``).

A file edited between the two reads must not send what nobody planned: a recorded row whose
re-read id or Idempotency-Key differs (or that is now rejected, or gone) is not sent; it
becomes a row failure (``manifest_changed``) naming the row, the field and the reason.

A manifest on an object store (issue 48) is read the same way, through ``doccheck.storage``: its
documents are listed once a run in each process (one LIST of its prefix, shared by the recording
and every batch read there), and its identity (ETag and size) is asked of the store once a run in
each process (one HEAD), never once a batch: :mod:`~doccheck.pipeline.planning._run_files`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from doccheck.extract import cache as word_cache
from doccheck.ledger import Ledger, LedgerWordStore, document_row, record_plan_group, recorded_rows, set_run_products
from doccheck.pipeline._batch_result import BatchResult, RowFailure
from doccheck.pipeline.planning._plan import PlannedDocument, base_key, run_defaults
from doccheck.pipeline.planning._plan_stream import PlanTally, file_paths, listed_files, plan_one, resolve_campaign
from doccheck.pipeline.planning._run_files import manifest_stamp, release_run_files, run_files
from doccheck.sources.manifest import (
    MULTIPART_MAX_BYTES,
    ManifestDocument,
    ManifestError,
    Rejection,
    RowCursor,
    RowStart,
    iter_manifest,
    manifest_listing,
)
from doccheck.storage import display, resolve

__all__ = [
    "MANIFEST_CHANGED",
    "BatchRef",
    "LoadedBatch",
    "PlanRecording",
    "RecordedPlan",
    "load_batch",
    "read_batch",
    "record_plan",
    "start_recording",
]

#: ``RowFailure.code`` (and the ledger's ``error_code``) of a row changed since it was planned.
MANIFEST_CHANGED = "manifest_changed"
#: The submission state of a key whose check exists (``submit_batch`` sends it no more).
SETTLED = "submitted"


@dataclass(frozen=True)
class BatchRef:
    """One batch of a recorded run: which manifest rows, how many documents, where they start.

    Rows ``first_row``..``last_row`` are numbered as :attr:`Rejection.row_number` and
    ``ManifestDocument.row_number``; the refs of a run cover every valid row exactly once (rows
    rejected at planning lie in some ref too, and are never sent). ``offset``/``line``: the
    byte offset and physical line of ``first_row`` in a CSV or JSONL file (None for Parquet,
    which is read from ``first_row``'s row group). No text: safe as a task parameter.
    """

    number: int  # 1-based
    first_row: int
    last_row: int
    documents: int  # valid documents in it
    offset: int | None
    line: int | None = None
    estimated_cost_cents: int = 0
    #: The manifest's size and modification time when the batch was recorded (``manifest_stamp``):
    #: while they stay, a batch whose keys all have their checks is not read again.
    stamp: str | None = None

    def start(self) -> RowStart:
        """Where a reader starts to read this batch."""
        return RowStart(row=self.first_row, offset=self.offset or 0, line=self.line or 1)

    def to_dict(self) -> dict[str, int | None]:
        """Plain JSON values (what a Prefect parameter or a log line holds)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchRef:
        """The inverse of :meth:`to_dict`."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass
class RecordedPlan:
    """What a real run keeps of its plan once the manifest is recorded: counts and refs, no texts.

    The documents' allowlisted metadata is in the ledger (``Ledger.document_metadata``), where
    the reports read it.
    """

    run_id: str
    campaign: str
    manifest: str
    tally: PlanTally
    batches: list[BatchRef]
    #: The run's defaults for rows without their own products (what ``load_batch`` re-plans with).
    default_products: tuple[str, ...] = ("ai",)
    metadata_columns: tuple[str, ...] = ()

    @property
    def documents(self) -> int:
        """Valid documents recorded."""
        return self.tally.documents

    def load(self, ledger: Ledger, ref: BatchRef) -> LoadedBatch:
        """:func:`read_batch` of one of this plan's refs with the plan's own settings."""
        return read_batch(
            ledger,
            self.run_id,
            self.manifest,
            ref,
            campaign=self.campaign,
            products=self.default_products,
            metadata_columns=self.metadata_columns,
        )


@dataclass
class LoadedBatch:
    """A batch re-read for sending: its documents (with texts) and the rows not to send."""

    ref: BatchRef
    documents: list[PlannedDocument]
    failures: list[RowFailure] = field(default_factory=list)
    #: Rows not read again because every key of the batch already had its check (a rerun).
    settled: int = 0

    def result(self) -> BatchResult:
        """The refused rows (and the settled ones, as ``already_done``) as a :class:`BatchResult`
        to ``merge`` with ``submit_batch``'s."""
        return BatchResult(total=len(self.failures) + self.settled, failed=len(self.failures),
                           already_done=self.settled, failures=list(self.failures))  # fmt: skip


class _Batcher:
    """Cuts the row stream into refs of ``size`` documents, only where a row starts a record.

    A new batch opens at a valid document once the current one is full (documents always start
    a record of their own; rows swallowed by a broken CSV quote never do), so rejected rows
    after the last full batch extend it rather than making an empty batch.
    """

    def __init__(self, size: int, stamp: str | None = None) -> None:
        self.size = max(1, int(size))
        self.stamp = stamp
        self.number = 0
        self.first_row: int | None = None
        self.offset: int | None = None
        self.line: int | None = None
        self.documents = 0
        self.cost = 0
        self.last_row = 0

    def add(self, row: int, cursor: RowCursor, planned: PlannedDocument | None) -> BatchRef | None:
        """Count one row; returns the batch this row closed (the row opens the next), if any."""
        closed = None
        if planned is not None and self.documents >= self.size:
            closed = self._close()
        if self.first_row is None:
            self.first_row, self.offset, self.line = row, cursor.offset, cursor.line
        if planned is not None:
            self.documents += 1
            self.cost += planned.estimated_cost_cents
        self.last_row = row
        return closed

    def finish(self) -> BatchRef | None:
        """The last batch (None when no row was valid)."""
        return self._close() if self.documents else None

    def _close(self) -> BatchRef:
        assert self.first_row is not None
        self.number += 1
        ref = BatchRef(
            number=self.number,
            first_row=self.first_row,
            last_row=self.last_row,
            documents=self.documents,
            offset=self.offset,
            line=self.line,
            estimated_cost_cents=self.cost,
            stamp=self.stamp,
        )
        self.first_row = self.offset = self.line = None
        self.documents = self.cost = 0
        return ref


def _absolute(manifest: str) -> str:
    """The manifest as the run records it: absolute, so a later collect or page (the shared
    passages, an export's sidecar) finds it from any working folder; a URL as ``display`` shows it."""
    if manifest == "-":
        return manifest
    path = resolve(manifest)
    return str(path.resolve()) if isinstance(path, Path) else display(path)


class PlanRecording:
    """A run being recorded: :meth:`documents` streams the planned documents by, :meth:`finish` ends it.

    Why a recording and not only :func:`record_plan`: cohort matching needs every document's
    text once, and reading the manifest a second time for it would double a term's planning.
    ``documents()`` yields each valid row's :class:`PlannedDocument` (text included) while the
    batches are recorded underneath, so a consumer such as ``match_cohort(recording.documents(),
    run_id=recording.run_id, ...)`` rides along the one pass; :meth:`finish` records whatever
    the consumer did not read and returns the :class:`RecordedPlan`. Created by
    :func:`start_recording`; a consumer that raises leaves a partly recorded run (``running``).
    """

    def __init__(
        self,
        ledger: Ledger,
        manifest: str | os.PathLike[str],
        *,
        campaign: str | None,
        products: str | Sequence[str] | None,
        metadata_columns: str | Sequence[str],
        params: Mapping[str, Any] | None,
        batch_size: int,
        on_batch: Callable[[BatchRef], None] | None,
        run_id: str | None,
    ) -> None:
        self.ledger = ledger
        self.manifest = manifest if isinstance(manifest, str) else display(resolve(manifest))
        self.campaign = resolve_campaign(manifest, campaign)
        self.default_products, self.metadata_columns = run_defaults(products, metadata_columns)
        self._cursor = RowCursor()
        listing = manifest_listing(manifest)
        listing.list_ahead()  # a store's prefix: listed while the run starts and the manifest is opened
        self._outcomes = iter_manifest(
            manifest, default_products=self.default_products, metadata_columns=self.metadata_columns,
            cursor=self._cursor, listing=listing,
        )  # fmt: skip
        if run_id is None or ledger.get_run(run_id) is None:
            run_id = ledger.start_run(campaign=self.campaign, manifest=_absolute(self.manifest),
                                      products=list(self.default_products), params=params, run_id=run_id)  # fmt: skip
        self.run_id: str = run_id
        self.files = run_files(run_id, manifest, listing)
        self.tally = PlanTally(campaign=self.campaign, manifest=resolve(manifest))
        self.batches: list[BatchRef] = []
        self._batcher = _Batcher(batch_size, self.files.stamp)
        self._on_batch = on_batch
        self._documents: list[dict[str, Any]] = []
        self._rejections: list[Rejection] = []
        self._read: list[PlannedDocument] = []  # the files read, to keep what each was read as
        self._used_products: set[str] = set()
        self._stream: Iterator[PlannedDocument] | None = None
        self._result: RecordedPlan | None = None

    def documents(self) -> Iterator[PlannedDocument]:
        """The valid rows, planned, in row order, recorded as they go by (iterate once)."""
        if self._stream is None:
            self._stream = self._record()
        return self._stream

    def finish(self) -> RecordedPlan:
        """Record the rest of the manifest (if the consumer stopped early) and the run's products."""
        if self._result is not None:
            return self._result
        for _ in self.documents():
            pass
        with self.ledger.session() as s:  # the products actually used, as record_run stored them
            set_run_products(s, self.run_id, self._used_products)
        self._result = RecordedPlan(
            run_id=self.run_id, campaign=self.campaign, manifest=self.manifest, tally=self.tally,
            batches=self.batches, default_products=self.default_products, metadata_columns=self.metadata_columns,
        )  # fmt: skip
        return self._result

    def close(self) -> None:
        """Let go of what reading the manifest took, once the run is recorded and its batches sent:
        the row streams (the recording's generator refers to the recording: a cycle that a collection
        frozen for the reports would keep) and the run's listing (:func:`release_run_files`)."""
        for stream in (self._stream, self._outcomes):
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        self._stream, self._outcomes = None, iter(())
        release_run_files(self.run_id)

    def _close(self, ref: BatchRef | None) -> None:
        """Write the rows read so far (those of ``ref``) in one transaction, then hand the ref on."""
        record_plan_group(
            self.ledger, self.run_id, self._documents, self._rejections, campaign=self.campaign, reads=self._read
        )
        self._documents.clear()
        self._rejections.clear()
        self._read.clear()
        if ref is not None:
            self.batches.append(ref)
            if self._on_batch is not None:
                self._on_batch(ref)

    def _record(self) -> Iterator[PlannedDocument]:
        store = LedgerWordStore(self.ledger, self.campaign, self.run_id)
        with word_cache.using(store):  # files already extracted (same bytes) are not extracted again
            word_cache.prefetch(file_paths(self.manifest, limit_bytes=MULTIPART_MAX_BYTES), store)  # every core
            listed = listed_files(self.manifest, self.files.listing, limit_bytes=MULTIPART_MAX_BYTES)
            # A store's files: read many at a time on a thread of their own, a few chunks ahead of
            # the rows, so the first batches are sent while the rest are read.
            with word_cache.reading_ahead(listed, store, limit_bytes=MULTIPART_MAX_BYTES):
                yield from self._record_rows()

    def _record_rows(self) -> Iterator[PlannedDocument]:
        try:
            for outcome in self._outcomes:
                if isinstance(outcome, Rejection):
                    self.tally.rejections.append(outcome)
                    if (closed := self._batcher.add(outcome.row_number, self._cursor, None)) is not None:
                        self._close(closed)
                    self._rejections.append(outcome)
                    continue
                planned = plan_one(outcome, self.campaign)
                self.tally.add(planned)
                self._used_products.update(planned.products)
                if (closed := self._batcher.add(outcome.row_number, self._cursor, planned)) is not None:
                    self._close(closed)  # before this row: it opens the next batch
                self._documents.append(document_row(self.run_id, self.campaign, planned))
                if planned.read_as:
                    self._read.append(planned)
                yield planned
            self._close(self._batcher.finish())
        except ManifestError as exc:  # found mid-file (a runaway row): the run stops here, said so
            self.ledger.finish_run(self.run_id, status="failed", summary={"error": str(exc)})
            raise


def start_recording(
    ledger: Ledger,
    manifest: str | os.PathLike[str],
    *,
    campaign: str | None = None,
    products: str | Sequence[str] | None = None,
    metadata_columns: str | Sequence[str] = (),
    params: Mapping[str, Any] | None = None,
    batch_size: int = 100,
    on_batch: Callable[[BatchRef], None] | None = None,
    run_id: str | None = None,
) -> PlanRecording:
    """Check the manifest as a whole and start the run; the rows stream through the recording.

    Arguments as :func:`record_plan`. Whole-manifest problems raise :class:`ManifestError`
    here, before the run is started.
    """
    return PlanRecording(
        ledger, manifest, campaign=campaign, products=products, metadata_columns=metadata_columns, params=params,
        batch_size=batch_size, on_batch=on_batch, run_id=run_id,
    )  # fmt: skip


def record_plan(
    ledger: Ledger,
    manifest: str | os.PathLike[str],
    *,
    campaign: str | None = None,
    products: str | Sequence[str] | None = None,
    metadata_columns: str | Sequence[str] = (),
    params: Mapping[str, Any] | None = None,
    batch_size: int = 100,
    on_batch: Callable[[BatchRef], None] | None = None,
    run_id: str | None = None,
) -> RecordedPlan:
    """Start a run and record ``manifest`` in it, batch by batch, reading the file once.

    Every row is validated and planned as ``load_plan`` does (``products``, the defaults for
    rows without their own, and ``metadata_columns`` are parsed the same way; duplicate ids
    are found over the whole manifest in compact form). Each batch of ``batch_size`` valid
    documents is written with the rejected rows before it in one transaction, then handed to
    ``on_batch`` (it may start sending while the rest is planned). Memory stays flat in the
    manifest's size: only the current batch's ledger rows (no texts), the tally and the refs
    are held. Whole-manifest problems raise :class:`ManifestError` before the run is started;
    one found mid-file (a row over the size bound) marks the run ``failed`` and is raised.
    ``run_id``: record into this run, creating it if it is not in the ledger yet (a retried
    task records into the same run; rows already recorded are skipped).
    """
    return start_recording(
        ledger, manifest, campaign=campaign, products=products, metadata_columns=metadata_columns, params=params,
        batch_size=batch_size, on_batch=on_batch, run_id=run_id,
    ).finish()  # fmt: skip


def _as_recorded(planned: PlannedDocument, recorded: Mapping[str, Any]) -> PlannedDocument:
    """The re-read document sent the way the run recorded it: a file the run sends as its text
    (the service refused its type, or the profile changed since) keeps that mode and key."""
    key = str(recorded["idempotency_key"])
    if key == planned.idempotency_key or base_key(key) != base_key(planned.idempotency_key):
        return planned
    return replace(planned, mode=recorded["mode"] or planned.mode, idempotency_key=key)


def _changed_field(recorded: Mapping[str, Any], doc: PlannedDocument) -> str | None:
    """Which field makes the re-read row differ from what was recorded (None: same)."""
    if doc.document_id != recorded["document_id"]:
        return "document_id"
    if doc.idempotency_key == recorded["idempotency_key"]:
        return None
    if sorted(doc.products) != sorted(recorded["products"] or []):
        return "products"
    return "path" if doc.path is not None else "text"


def read_batch(
    ledger: Ledger,
    run_id: str,
    manifest: str | os.PathLike[str],
    ref: BatchRef,
    *,
    campaign: str | None = None,
    products: str | Sequence[str] | None = None,
    metadata_columns: str | Sequence[str] = (),
) -> LoadedBatch:
    """Re-read only ``ref``'s rows and return the recorded documents to send, and those not to.

    Arguments as given to :func:`record_plan` (``campaign`` defaults to the run's). A CSV or
    JSONL file is opened at ``ref.offset``, so a batch costs the same anywhere in the manifest;
    Parquet resumes where the previous read of the same file stopped, else starts at
    ``ref.first_row``'s row group (Arrow decodes the group's rows before it, docs/benchmarks.md). Rows appended since planning are not read. A recorded row that now reads differently (another id, text,
    file or products), is now rejected or is gone is not returned: it is a :class:`RowFailure`
    (``manifest_changed``) and, unless its key already has a submission, the ledger records the
    failure so the reports show it.
    """
    name = campaign if campaign is not None else ledger.campaign_of(run_id)
    defaults, allowlist = run_defaults(products, metadata_columns)
    with ledger.session() as s:
        recorded = recorded_rows(s, run_id, ref.first_row, ref.last_row)
    loaded = LoadedBatch(ref=ref, documents=[])
    if (
        recorded
        and ref.stamp
        and all(r["state"] == SETTLED for r in recorded.values())
        and ref.stamp == manifest_stamp(manifest, run_id)
    ):
        # a rerun with nothing new: every key already has its check, nothing would be sent,
        # so the rows are not read again (what was recorded a moment ago is what is reported)
        loaded.settled = len(recorded)
        return loaded
    changed: dict[int, tuple[str, str]] = {}
    seen: set[int] = set()
    try:
        outcomes = iter_manifest(
            manifest, default_products=defaults, metadata_columns=allowlist, start=ref.start(),
            listing=run_files(run_id, manifest).listing,
        )  # fmt: skip
        with word_cache.using(LedgerWordStore(ledger, name, run_id)):  # the files extracted when recorded
            _compare(outcomes, ref, recorded, name, loaded, changed, seen)
    except ManifestError as exc:
        for row in recorded:
            if row not in seen:
                changed[row] = ("row", f"the manifest can no longer be read there ({exc})")
                seen.add(row)
    for row in recorded:
        if row not in seen:
            changed[row] = ("row", "the row is no longer in the manifest")
    for row, (what, why) in sorted(changed.items()):
        loaded.failures.append(_refuse(ledger, name, recorded[row], row, what, why))
    return loaded


def _compare(
    outcomes: Iterator[ManifestDocument | Rejection],
    ref: BatchRef,
    recorded: Mapping[int, Mapping[str, Any]],
    name: str,
    loaded: LoadedBatch,
    changed: dict[int, tuple[str, str]],
    seen: set[int],
) -> None:
    """The re-read rows of ``ref`` against what was recorded: the same go to ``loaded``, the
    others to ``changed`` (row → field, why)."""
    for outcome in outcomes:
        row = outcome.row_number
        if row > ref.last_row:
            break
        if row not in recorded:
            continue
        seen.add(row)
        if isinstance(outcome, Rejection):
            changed[row] = (outcome.field, f"it is now rejected: {outcome.reason}")
            continue
        planned = _as_recorded(plan_one(outcome, name), recorded[row])
        what = _changed_field(recorded[row], planned)
        if what is None:
            loaded.documents.append(planned)
        else:
            changed[row] = (what, _difference(what, recorded[row], planned))


def _difference(what: str, recorded: Mapping[str, Any], doc: ManifestDocument) -> str:
    if what == "document_id":
        return f"its document_id is now {doc.document_id[:80]!r}, not {str(recorded['document_id'])[:80]!r}"
    if what == "products":
        return f"its products are now {', '.join(doc.products)}, not {', '.join(recorded['products'] or [])}"
    return f"its {what} now has other content (SHA-256 {doc.content_hash[:12]}…, planned {str(recorded['content_hash'])[:12]}…)"


def _refuse(ledger: Ledger, campaign: str, recorded: Mapping[str, Any], row: int, what: str, why: str) -> RowFailure:
    message = (
        f"row {row}, field {what!r}: manifest changed since the run was planned ({why}); not sent — "
        "start a new run to check the changed file"
    )
    key = str(recorded["idempotency_key"])
    if ledger.submission_for_key(key) is None:  # never overwrite a submission in flight or done
        ledger.mark_submit_failed(
            key,
            code=MANIFEST_CHANGED,
            message=message,
            campaign=campaign,
            document_id=str(recorded["document_id"]),
            products=list(recorded["products"] or []),
            mode=recorded["mode"],
        )
    return RowFailure(str(recorded["document_id"]), key, MANIFEST_CHANGED, message)


def load_batch(
    ledger: Ledger,
    run_id: str,
    manifest: str | os.PathLike[str],
    ref: BatchRef,
    *,
    campaign: str | None = None,
    products: str | Sequence[str] | None = None,
    metadata_columns: str | Sequence[str] = (),
) -> list[PlannedDocument]:
    """The documents of ``ref`` to send (:func:`read_batch` without the refused rows, which it
    records in the ledger as ``manifest_changed`` failures)."""
    return read_batch(
        ledger, run_id, manifest, ref, campaign=campaign, products=products, metadata_columns=metadata_columns
    ).documents
