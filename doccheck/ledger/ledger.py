"""The :class:`Ledger`: every durable fact of the pipeline, behind methods named for what
the flows and the receiver need.

Why methods and not raw sessions for callers: the state machine of a submission (see
:class:`~doccheck.ledger.tables.SubmissionRow`) is what guarantees "at most one billed
check per row", so its transitions live here, in one place, and are each one short
transaction (safe for the receiver process writing at the same time).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import SecretStr
from sqlalchemy import func, insert, or_, update
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlmodel import Session, SQLModel, col, select

from doccheck import domain
from doccheck.ledger.claims import Claims
from doccheck.ledger.engine import create_ledger_engine, redact_url
from doccheck.ledger.money import record_charge, refresh_refund
from doccheck.ledger.money_tables import MONEY_TABLES
from doccheck.ledger.tables import (
    LEDGER_TABLES,
    DocumentRow,
    OutcomeRow,
    RejectionRow,
    RunRow,
    SubmissionRow,
    WebhookEventRow,
    WebhookSecretRow,
    utcnow,
)

log = logging.getLogger(__name__)

PRODUCTS = domain.PRODUCTS
TERMINAL = domain.TERMINAL_PRODUCT_STATES


@dataclass(frozen=True)
class PendingCheck:
    """A submitted check that still has a product without a final, fetched result.

    ``awaiting_fetch``: an event said a product finished but its results (scores,
    sources) are not in the ledger yet, so the check should be fetched now.
    ``silent_products``: products still processing with no event yet (poll after a grace).
    """

    check_id: str
    campaign: str
    submitted_at: datetime | None
    last_polled_at: datetime | None
    last_event_at: datetime | None
    awaiting_fetch: bool
    silent_products: tuple[str, ...]


def _dump(obj: Any) -> dict[str, Any]:
    """A JSON-able dict from a pydantic model (client models) or a mapping."""
    if obj is None:
        return {}
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json", exclude_none=False)
    if isinstance(obj, Mapping):
        return json.loads(json.dumps(dict(obj), default=str))
    raise TypeError(f"cannot store {type(obj).__name__} in the ledger")


def _parse_time(value: Any) -> datetime | None:
    """Aware-UTC datetime from an ISO string or datetime (None stays None; naive means UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def _error_parts(error: Any) -> tuple[str | None, str | None]:
    if not error:
        return None, None
    if isinstance(error, Mapping):
        return error.get("code"), error.get("message")
    return getattr(error, "code", None), getattr(error, "message", None)


def _product_fields(product: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The outcome columns of one product object (``check.ai`` / ``check.similarity``).

    Returns ``fetched=True`` only when the object carries the product's full result, so
    that an event's bare ``{"status": "completed"}`` still triggers one GET of the check.
    """
    status = str(data.get("status") or "processing")
    code, message = _error_parts(data.get("error"))
    fields: dict[str, Any] = {"status": status, "error_code": code, "error_message": message}
    if status == "failed":
        fields["fetched"] = True
    if product == "ai":
        fields["score"] = data.get("score")
        fields["label"] = data.get("label")
        if status == "completed":
            fields["fetched"] = data.get("score") is not None
    elif product == "similarity":
        sources = data.get("sources")
        fields["score"] = data.get("score")
        fields["matched_words"] = data.get("matched_words")
        if sources is not None:
            fields["sources"] = [dict(s) for s in sources]
            fields["source_count"] = len(sources)
        if status == "completed":
            fields["fetched"] = data.get("score") is not None and sources is not None
    else:  # a product this code does not know yet: keep the raw JSON, treat status as final
        fields["fetched"] = status in TERMINAL
    return fields


class Ledger:
    """The pipeline's durable record (SQLite or PostgreSQL via SQLAlchemy URL).

    The schema is created on first use, so a fresh ``sqlite:///doccheck.db`` just works.
    The ledger never stores document texts, the API key, or (unless the webhook was
    configured through doccheck) the webhook secret.
    """

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.engine = create_ledger_engine(database_url)
        self._create_schema()
        #: Ownership of keys in flight and sends in doubt (:mod:`doccheck.ledger.claims`).
        self.claims = Claims(self.engine)

    def __repr__(self) -> str:
        return f"Ledger({redact_url(self.database_url)!r})"

    # -- plumbing ---------------------------------------------------------------------

    def _create_schema(self) -> None:
        """Create missing tables; tolerate another process creating them at the same moment."""
        for attempt in range(3):
            try:
                SQLModel.metadata.create_all(self.engine, tables=LEDGER_TABLES + MONEY_TABLES)
                return
            except (IntegrityError, ProgrammingError, OperationalError):
                if attempt == 2:
                    raise

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One short transaction: committed on success, rolled back on error."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def close(self) -> None:
        """Release pooled connections (tests, CLI exit)."""
        self.engine.dispose()

    # -- runs -------------------------------------------------------------------------

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
        run = RunRow(
            id=run_id or str(uuid.uuid4()),
            campaign=campaign,
            manifest=manifest,
            products=list(products),
            params=_dump(params or {}),
        )
        with self.session() as s:
            s.add(run)
        return run.id

    def finish_run(
        self, run_id: str, *, status: str = "finished", summary: Mapping[str, Any] | None = None
    ) -> None:
        """Close a run with its final status and a JSON summary."""
        with self.session() as s:
            run = s.get(RunRow, run_id)
            if run is None:
                raise KeyError(f"unknown run id {run_id!r}")
            run.status = status
            run.finished_at = utcnow()
            run.summary = _dump(summary) if summary is not None else self._summary(s, run_id)
            s.add(run)

    def get_run(self, run_id: str) -> RunRow | None:
        """The run row, or None."""
        with self.session() as s:
            return s.get(RunRow, run_id)

    def latest_run(self, campaign: str) -> RunRow | None:
        """The most recent run of a campaign (for ``collect_results`` by campaign)."""
        with self.session() as s:
            stmt = select(RunRow).where(RunRow.campaign == campaign)
            return s.exec(stmt.order_by(col(RunRow.started_at).desc())).first()

    def campaign_of(self, run_id: str) -> str:
        """The campaign of a run (raises KeyError for an unknown run)."""
        run = self.get_run(run_id)
        if run is None:
            raise KeyError(f"unknown run id {run_id!r}")
        return run.campaign

    # -- documents and rejections -----------------------------------------------------

    def record_documents(self, run_id: str, documents: Iterable[Any]) -> int:
        """Record the accepted rows of a run (planning's ``PlannedDocument``); idempotent.

        Only what the reports need is kept: hash, size, words, mode, key and the caller's
        allowlisted metadata; never the text.
        """
        campaign = self.campaign_of(run_id)
        count = 0
        with self.session() as s:
            existing = set(
                s.exec(select(DocumentRow.document_id).where(DocumentRow.run_id == run_id)).all()
            )
            for doc in documents:
                if doc.document_id in existing:
                    continue
                existing.add(doc.document_id)
                s.add(
                    DocumentRow(
                        run_id=run_id,
                        campaign=campaign,
                        document_id=doc.document_id,
                        row_number=getattr(doc, "row_number", None),
                        name=getattr(doc, "name", None),
                        mode=getattr(doc, "mode", None),
                        content_hash=getattr(doc, "content_hash", None),
                        size_bytes=getattr(doc, "size_bytes", None),
                        words=getattr(doc, "words", None),
                        products=list(doc.products),
                        idempotency_key=doc.idempotency_key,
                        estimated_cost_cents=getattr(doc, "estimated_cost_cents", None),
                        doc_metadata={str(k): v for k, v in (getattr(doc, "metadata", None) or {}).items()},
                    )
                )
                count += 1
        return count

    def record_rejections(self, run_id: str, rejections: Iterable[Any]) -> int:
        """Record the rows refused before sending (planning's ``Rejection``); idempotent per run."""
        with self.session() as s:
            seen = {
                (r.row_number, r.document_id, r.code)
                for r in s.exec(select(RejectionRow).where(RejectionRow.run_id == run_id)).all()
            }
            count = 0
            for r in rejections:
                ident = (r.row_number, r.document_id, r.code)
                if ident in seen:
                    continue
                seen.add(ident)
                s.add(
                    RejectionRow(
                        run_id=run_id,
                        row_number=r.row_number,
                        document_id=r.document_id,
                        field=r.field,
                        code=r.code,
                        reason=r.reason,
                    )
                )
                count += 1
        return count

    def document_metadata(self, run_id: str) -> dict[str, dict[str, Any]]:
        """``document_id → metadata`` of a run, for joining caller columns into the reports."""
        with self.session() as s:
            rows = s.exec(select(DocumentRow).where(DocumentRow.run_id == run_id)).all()
            return {r.document_id: dict(r.doc_metadata or {}) for r in rows}

    # -- submissions ------------------------------------------------------------------

    def submission_for_key(self, idempotency_key: str) -> SubmissionRow | None:
        """The submission of a key, whatever its state (None when never seen)."""
        with self.session() as s:
            return s.exec(
                select(SubmissionRow).where(SubmissionRow.idempotency_key == idempotency_key)
            ).first()

    def submissions_for_keys(self, keys: Iterable[str]) -> dict[str, SubmissionRow]:
        """Submissions of many keys at once (the batch pre-check of a rerun)."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, SubmissionRow] = {}
        with self.session() as s:
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                stmt = select(SubmissionRow).where(col(SubmissionRow.idempotency_key).in_(chunk))
                for row in s.exec(stmt).all():
                    found[row.idempotency_key] = row
        return found

    def _upsert_submission(self, s: Session, key: str, **fields: Any) -> SubmissionRow:
        row = s.exec(select(SubmissionRow).where(SubmissionRow.idempotency_key == key)).first()
        if row is None:
            row = SubmissionRow(idempotency_key=key, **fields)
        else:
            for name, value in fields.items():
                setattr(row, name, value)
            row.updated_at = utcnow()
        s.add(row)
        s.flush()
        return row

    def mark_submitting(
        self,
        idempotency_key: str,
        *,
        campaign: str,
        document_id: str,
        products: Sequence[str],
        mode: str | None,
    ) -> None:
        """Write the intent BEFORE the request: a crash after the service answered leaves
        this row in ``submitting``, and the resume sends the same key again (a free replay).

        Core statements, not ORM objects: this runs once per document on the hot path.
        """
        t = SubmissionRow.__table__
        fields = {
            "campaign": campaign,
            "document_id": document_id,
            "products": list(products),
            "mode": mode,
            "state": "submitting",
            "error_code": None,
            "error_message": None,
        }
        for attempt in range(2):
            now = utcnow()
            try:
                with self.engine.begin() as conn:
                    done = conn.execute(
                        update(t)
                        .where(t.c.idempotency_key == idempotency_key, t.c.state != "submitted")
                        .values(**fields, attempts=t.c.attempts + 1, updated_at=now)
                    ).rowcount
                    if not done and conn.execute(  # a submitted row is never moved back
                        select(t.c.id).where(t.c.idempotency_key == idempotency_key)
                    ).first() is None:
                        conn.execute(
                            insert(t).values(
                                idempotency_key=idempotency_key, **fields, attempts=1, replayed=False,
                                created_at=now, updated_at=now,
                            )  # fmt: skip
                        )
                return
            except IntegrityError:  # inserted by another process meanwhile: update it
                if attempt:
                    raise

    def mark_upload_created(self, idempotency_key: str, upload_id: str) -> None:
        """Remember the upload id before the bytes are sent, so a resume can create the
        check from it (or replay) instead of taking another of the 50 waiting slots."""
        t = SubmissionRow.__table__
        with self.engine.begin() as conn:  # conditional: a submitted row is never moved back
            conn.execute(
                update(t)
                .where(t.c.idempotency_key == idempotency_key, t.c.state != "submitted")
                .values(upload_id=upload_id, state="uploading", updated_at=utcnow())
            )

    def mark_submitted(
        self,
        idempotency_key: str,
        check: Any,
        *,
        mode: str | None = None,
        upload_id: str | None = None,
        replayed: bool | None = None,
    ) -> None:
        """Record the service's check and one ``processing`` outcome per product.

        The outcomes are written first, in their own transaction: a crash in between
        leaves outcomes and a ``submitting`` row, which the resume replays; the reverse
        order could leave a submitted check without outcomes, which nobody would poll.
        """
        data = _dump(check)
        check_id = str(data["id"])
        t = SubmissionRow.__table__
        with self.engine.connect() as conn:
            current = conn.execute(
                select(t.c.campaign, t.c.submitted_at).where(t.c.idempotency_key == idempotency_key)
            ).first()
            conn.rollback()
        campaign = current.campaign if current is not None else None
        self._create_outcomes(data, campaign)
        now = utcnow()
        fields: dict[str, Any] = {
            "state": "submitted",
            "check_id": check_id,
            "cost_cents": (data.get("cost") or {}).get("total_cents"),
            "words": data.get("words"),
            "replayed": bool(getattr(check, "replayed", False) if replayed is None else replayed),
            "error_code": None,
            "error_message": None,
            "updated_at": now,
        }
        if mode is not None:
            fields["mode"] = mode
        if upload_id is not None:
            fields["upload_id"] = upload_id
        with self.engine.begin() as conn:
            if current is None:  # a check recorded without mark_submitting (tools, tests)
                conn.execute(
                    insert(t).values(
                        idempotency_key=idempotency_key, campaign="", attempts=1, created_at=now,
                        document_id=str((data.get("metadata") or {}).get("document_id", "")),
                        products=list(data.get("products") or []), submitted_at=now, **fields,
                    )  # fmt: skip
                )
            else:
                conn.execute(
                    update(t)
                    .where(t.c.idempotency_key == idempotency_key)
                    .values(**fields, submitted_at=current.submitted_at or now)
                )
            record_charge(conn, check_id, campaign, data.get("cost"))  # once per check id

    def _create_outcomes(self, data: Mapping[str, Any], campaign: str | None) -> None:
        """Outcome rows of a new check: a bulk insert in the common case (none exist yet, all
        products processing), else the general merge (an event came first, a replayed check
        that already finished)."""
        check_id = str(data["id"])
        products = list(data.get("products") or [p for p in PRODUCTS if data.get(p)])
        o = OutcomeRow.__table__
        fresh = all(str((data.get(p) or {}).get("status") or "processing") == "processing" for p in products)
        if fresh:
            now = utcnow()
            try:
                with self.engine.begin() as conn:
                    if conn.execute(select(o.c.id).where(o.c.check_id == check_id).limit(1)).first() is None:
                        conn.execute(
                            insert(o),
                            [
                                {"check_id": check_id, "product": p, "campaign": campaign, "status": "processing",
                                 "fetched": False, "raw": dict(data.get(p) or {"status": "processing"}),
                                 "updated_at": now}  # fmt: skip
                                for p in products
                            ],
                        )
                        return
            except IntegrityError:
                pass  # created concurrently: merge below
        with self.session() as s:
            self._apply_check(s, data, source="poll", campaign=campaign)  # learnt from the API answer

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
        fields: dict[str, Any] = {"state": state, "error_code": code, "error_message": message}
        for name, value in (
            ("campaign", campaign),
            ("document_id", document_id),
            ("products", list(products) if products is not None else None),
            ("mode", mode),
        ):
            if value is not None:
                fields[name] = value
        t = SubmissionRow.__table__
        for attempt in range(2):
            now = utcnow()
            try:
                with self.engine.begin() as conn:
                    # One conditional UPDATE, not read-then-write: under PostgreSQL's read
                    # committed a check recorded meanwhile by another process must win.
                    done = conn.execute(
                        update(t)
                        .where(t.c.idempotency_key == idempotency_key, t.c.state != "submitted")
                        .values(**fields, updated_at=now)
                    ).rowcount
                    if not done and conn.execute(
                        select(t.c.id).where(t.c.idempotency_key == idempotency_key)
                    ).first() is None:
                        conn.execute(
                            insert(t).values(
                                idempotency_key=idempotency_key, campaign=fields.get("campaign", ""),
                                document_id=fields.get("document_id", ""), products=fields.get("products", []),
                                **{k: v for k, v in fields.items() if k not in ("campaign", "document_id", "products")},
                                attempts=0, replayed=False, created_at=now, updated_at=now,
                            )  # fmt: skip
                        )
                return
            except IntegrityError:  # inserted by another process meanwhile: update it
                if attempt:
                    raise

    def mark_polled(self, check_ids: Iterable[str]) -> None:
        """Remember when checks were last polled (spaces out the polling fallback)."""
        ids = list(check_ids)
        if not ids:
            return
        now = utcnow()
        with self.session() as s:
            for i in range(0, len(ids), 500):
                rows = s.exec(
                    select(SubmissionRow).where(col(SubmissionRow.check_id).in_(ids[i : i + 500]))
                ).all()
                for row in rows:
                    row.last_polled_at = now
                    s.add(row)

    # -- outcomes ---------------------------------------------------------------------

    def _outcomes(
        self, s: Session, check_id: str, products: Sequence[str], campaign: str | None
    ) -> dict[str, OutcomeRow]:
        """The outcome rows of a check's products, creating the missing ones in one savepoint
        (another process may create them at the same moment: then they are re-read)."""
        stmt = select(OutcomeRow).where(OutcomeRow.check_id == check_id)
        rows = {r.product: r for r in s.exec(stmt).all()}
        missing = [p for p in products if p not in rows]
        if missing:
            new = [OutcomeRow(check_id=check_id, product=p, campaign=campaign) for p in missing]
            try:
                with s.begin_nested():
                    s.add_all(new)
                    s.flush()
                rows.update({r.product: r for r in new})
            except IntegrityError:
                rows = {r.product: r for r in s.exec(stmt).all()}
        for row in rows.values():
            if campaign and not row.campaign:
                row.campaign = campaign
        return rows

    def _apply_product(
        self,
        row: OutcomeRow,
        fields: Mapping[str, Any],
        *,
        source: str,
        raw: Mapping[str, Any],
        completed_at: datetime | None,
    ) -> None:
        status = fields["status"]
        was_terminal = row.status in TERMINAL
        if was_terminal and status not in TERMINAL:
            return  # never go back to processing
        if row.status in TERMINAL and row.fetched and not fields.get("fetched"):
            return  # a bare event after the full result adds nothing
        for name, value in fields.items():
            if name == "fetched":
                continue
            if value is not None or status in TERMINAL:
                setattr(row, name, value)
        row.fetched = bool(fields.get("fetched", False))
        if status in TERMINAL:
            row.completed_at = completed_at or row.completed_at or utcnow()
            if not was_terminal:
                row.source = source  # how the final status was learnt: webhook | poll
        row.raw = dict(raw)
        row.updated_at = utcnow()

    def _apply_check(
        self,
        s: Session,
        data: Mapping[str, Any],
        *,
        source: str,
        campaign: str | None,
        submission: SubmissionRow | None = None,
    ) -> int:
        check_id = data["id"]
        products = list(data.get("products") or [p for p in PRODUCTS if data.get(p)])
        rows = self._outcomes(s, check_id, products, campaign)
        changed = 0
        for product in products:
            pdata = data.get(product) or {"status": "processing"}
            row = rows[product]
            before = (row.status, row.fetched)
            completed_at = _parse_time(pdata.get("completed_at")) or _parse_time(data.get("completed_at"))
            self._apply_product(
                row,
                _product_fields(product, pdata),
                source=source,
                raw=pdata,
                completed_at=completed_at,
            )
            s.add(row)
            changed += (row.status, row.fetched) != before
        cost = (data.get("cost") or {}).get("total_cents")
        if cost is not None:
            sub = submission
            if sub is None:
                sub = s.exec(select(SubmissionRow).where(SubmissionRow.check_id == check_id)).first()
            if sub is not None and sub.cost_cents != cost:
                sub.cost_cents = cost  # refunds of failed products show up here
                s.add(sub)
        s.flush()
        owner = campaign or (submission.campaign if submission is not None else None)
        record_charge(s.connection(), check_id, owner, data.get("cost"))  # once per check id
        return changed

    def record_check(self, check: Any, source: str = "poll") -> int:
        """Store a check fetched with GET /checks/{id}; returns how many products changed."""
        data = _dump(check)
        with self.session() as s:
            sub = s.exec(select(SubmissionRow).where(SubmissionRow.check_id == data["id"])).first()
            return self._apply_check(
                s, data, source=source, campaign=sub.campaign if sub else None, submission=sub
            )

    # -- webhook events ---------------------------------------------------------------

    def record_event(self, event: Any, raw: bytes) -> bool:
        """Store a verified delivery once. Returns False for a duplicate event id.

        ``raw`` is the verified body; it is what is stored (not a re-serialisation), so
        fields this code does not model are kept.
        """
        try:
            payload = json.loads(raw)
        except (ValueError, TypeError):
            payload = _dump(event)
        check = getattr(event, "check", None)
        row = WebhookEventRow(
            event_id=str(event.id),
            type=str(event.type),
            product=getattr(event, "product", None),
            check_id=getattr(check, "id", None),
            created_at=_parse_time(getattr(event, "created_at", None)),
            payload=payload if isinstance(payload, dict) else {"body": payload},
        )
        try:
            with self.session() as s:
                dup = s.exec(
                    select(WebhookEventRow.id).where(WebhookEventRow.event_id == row.event_id)
                ).first()
                if dup is not None:
                    return False
                s.add(row)
        except IntegrityError:
            return False
        return True

    def apply_pending_events(self, limit: int | None = None, *, chunk: int = 200) -> int:
        """Turn stored, not yet applied events into outcomes; returns how many were applied.

        An event for a check the ledger does not know yet (the receiver was faster than
        ``mark_submitted``, or a crash lost that write) still creates its outcome row, so
        the resume finds it instead of waiting for a delivery that already happened.
        """
        applied = 0
        while limit is None or applied < limit:
            size = chunk if limit is None else min(chunk, limit - applied)
            with self.session() as s:  # short transactions: the receiver keeps inserting meanwhile
                stmt = select(WebhookEventRow).where(WebhookEventRow.applied == False)  # noqa: E712
                events = s.exec(stmt.order_by(col(WebhookEventRow.id)).limit(size)).all()
                for ev in events:
                    self._apply_event(s, ev)
                    ev.applied = True
                    ev.payload = {}  # the raw body (document metadata) is not kept once applied (docs/data.md)
                    s.add(ev)
            applied += len(events)
            if len(events) < size:
                break
        return applied

    def _apply_event(self, s: Session, ev: WebhookEventRow) -> None:
        payload = ev.payload or {}
        check = payload.get("check") or {}
        product = ev.product or payload.get("product")
        check_id = ev.check_id or check.get("id")
        if not product or not check_id:
            return
        pdata = dict(check.get(product) or {})
        if ev.type == "check.failed":
            pdata["status"] = "failed"
            if not pdata.get("error") and payload.get("error"):
                pdata["error"] = payload["error"]
        elif ev.type == "check.completed":
            pdata["status"] = "completed"
        else:
            return
        sub = s.exec(select(SubmissionRow).where(SubmissionRow.check_id == check_id)).first()
        row = self._outcomes(s, check_id, [product], sub.campaign if sub else None)[product]
        self._apply_product(
            row,
            _product_fields(product, pdata),
            source="webhook",
            raw=pdata,
            completed_at=_parse_time(pdata.get("completed_at")) or ev.created_at or ev.received_at,
        )
        row.event_at = row.event_at or ev.received_at
        s.add(row)
        s.flush()
        refresh_refund(s.connection(), check_id)  # a failed product is refunded

    def unapplied_event_count(self) -> int:
        """How many stored events wait to be applied."""
        with self.session() as s:
            return s.exec(
                select(func.count()).select_from(WebhookEventRow).where(WebhookEventRow.applied == False)  # noqa: E712
            ).one()

    def events(self, check_id: str | None = None) -> list[WebhookEventRow]:
        """Stored events (all, or of one check), oldest first."""
        with self.session() as s:
            stmt = select(WebhookEventRow).order_by(col(WebhookEventRow.id))
            if check_id is not None:
                stmt = stmt.where(WebhookEventRow.check_id == check_id)
            return list(s.exec(stmt).all())

    # -- pending ----------------------------------------------------------------------

    def _scoped_submissions(self, run_id: str | None, campaign: str | None) -> Any:
        stmt = select(SubmissionRow).where(SubmissionRow.state == "submitted")
        if run_id is not None:
            keys = select(DocumentRow.idempotency_key).where(DocumentRow.run_id == run_id)
            stmt = stmt.where(col(SubmissionRow.idempotency_key).in_(keys))
        if campaign is not None:
            stmt = stmt.where(SubmissionRow.campaign == campaign)
        return stmt

    def pending_outcomes(self, *, run_id: str | None = None, campaign: str | None = None) -> list[OutcomeRow]:
        """Outcomes without a final, fetched result (processing, or finished per an event
        but not fetched yet), for the submitted checks of a run or a campaign."""
        subs = self._scoped_submissions(run_id, campaign).subquery()
        with self.session() as s:
            stmt = (
                select(OutcomeRow)
                .join(subs, subs.c.check_id == OutcomeRow.check_id)
                .where(or_(OutcomeRow.status == "processing", OutcomeRow.fetched == False))  # noqa: E712
                .order_by(col(OutcomeRow.id))
            )
            return list(s.exec(stmt).all())

    def outcome_counts(self, *, run_id: str | None = None, campaign: str | None = None) -> dict[str, int]:
        """``{"total", "completed", "failed", "pending"}`` over the products of the submitted
        checks of a run or campaign, in one aggregate query (cheap enough for every poll
        round of a 10,000-document run). ``completed`` counts only fetched results."""
        subs = self._scoped_submissions(run_id, campaign).subquery()
        with self.session() as s:
            stmt = (
                select(OutcomeRow.status, OutcomeRow.fetched, func.count())
                .join(subs, subs.c.check_id == OutcomeRow.check_id)
                .group_by(OutcomeRow.status, OutcomeRow.fetched)
            )
            counts = {"total": 0, "completed": 0, "failed": 0, "pending": 0}
            for status, fetched, n in s.exec(stmt).all():
                counts["total"] += n
                if status == "failed":
                    counts["failed"] += n
                elif status == "completed" and fetched:
                    counts["completed"] += n
                else:
                    counts["pending"] += n
        return counts

    def pending_checks(self, *, run_id: str | None = None, campaign: str | None = None) -> list[PendingCheck]:
        """Pending outcomes grouped by check, with what polling needs to decide."""
        subs = self._scoped_submissions(run_id, campaign).subquery()
        with self.session() as s:
            stmt = (
                select(
                    OutcomeRow.check_id,
                    OutcomeRow.product,
                    OutcomeRow.status,
                    OutcomeRow.event_at,
                    subs.c.campaign,
                    subs.c.submitted_at,
                    subs.c.last_polled_at,
                )
                .join(subs, subs.c.check_id == OutcomeRow.check_id)
                .where(or_(OutcomeRow.status == "processing", OutcomeRow.fetched == False))  # noqa: E712
                .order_by(col(OutcomeRow.id))
            )
            grouped: dict[str, dict[str, Any]] = {}
            for check_id, product, status, event_at, camp, submitted_at, polled in s.exec(stmt).all():
                g = grouped.setdefault(
                    check_id,
                    {"campaign": camp, "submitted_at": submitted_at, "last_polled_at": polled,
                     "last_event_at": None, "awaiting_fetch": False, "silent": []},
                )  # fmt: skip
                if event_at is not None and (g["last_event_at"] is None or event_at > g["last_event_at"]):
                    g["last_event_at"] = event_at
                if status in TERMINAL:
                    g["awaiting_fetch"] = True
                elif event_at is None:
                    g["silent"].append(product)
        return [
            PendingCheck(
                check_id=cid,
                campaign=g["campaign"],
                submitted_at=g["submitted_at"],
                last_polled_at=g["last_polled_at"],
                last_event_at=g["last_event_at"],
                awaiting_fetch=g["awaiting_fetch"],
                silent_products=tuple(g["silent"]),
            )
            for cid, g in grouped.items()
        ]

    # -- webhook secret ---------------------------------------------------------------

    def store_webhook_secret(self, secret: str | SecretStr, scope: str = "default") -> None:
        """Keep the account signing secret returned by PUT /webhook or a rotation.

        Only call this when the user configured the webhook through doccheck: from then
        on the database holds a secret and must be protected like the API key. The
        previous secret is kept so deliveries signed before a rotation still verify.
        """
        value = secret.get_secret_value() if isinstance(secret, SecretStr) else str(secret)
        if not value:
            raise ValueError("empty webhook secret")
        with self.session() as s:
            row = s.get(WebhookSecretRow, scope)
            if row is None:
                row = WebhookSecretRow(scope=scope, secret=value)
            elif row.secret != value:
                row.previous_secret, row.secret = row.secret, value
            row.updated_at = utcnow()
            s.add(row)

    def delete_webhook_secret(self, scope: str = "default") -> None:
        """Forget a stored secret (the webhook was deleted)."""
        with self.session() as s:
            row = s.get(WebhookSecretRow, scope)
            if row is not None:
                s.delete(row)

    def webhook_secrets(self) -> list[SecretStr]:
        """Every stored secret (current ones first, then the previous ones)."""
        with self.session() as s:
            rows = s.exec(select(WebhookSecretRow).order_by(col(WebhookSecretRow.updated_at).desc())).all()
            current = [SecretStr(r.secret) for r in rows]
            previous = [SecretStr(r.previous_secret) for r in rows if r.previous_secret]
        return current + previous

    # -- reports and summaries --------------------------------------------------------

    def report_rows(self, *, run_id: str | None = None, campaign: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """The four report tables as lists of row dicts (see :mod:`doccheck.ledger.report`)."""
        from doccheck.ledger.report import build_report_rows

        return build_report_rows(self, run_id=run_id, campaign=campaign)

    def report_tables(self, *, run_id: str | None = None, campaign: str | None = None) -> Any:
        """The report tables of a run (or of a campaign's latest run) as ``ReportTables``."""
        from doccheck.ledger.report import build_report_tables

        return build_report_tables(self, run_id=run_id, campaign=campaign)

    def _summary(self, s: Session, run_id: str) -> dict[str, Any]:
        from doccheck.ledger.report import summarize

        return summarize(self, s, run_id)

    def run_summary(self, run_id: str) -> dict[str, Any]:
        """Counts of a run: documents, rejected, per submission state, per product status, cost."""
        with self.session() as s:
            return self._summary(s, run_id)
