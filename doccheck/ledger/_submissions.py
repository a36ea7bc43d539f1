"""Submissions: the state machine of one idempotency key (planned → submitting →
uploading → submitted, or failed / skipped_budget).

Part of the :class:`~doccheck.ledger._facade.Ledger` facade. Its transitions are what
guarantees "at most one billed check per row", so they live here, each one short,
conditional transaction (a submitted row is never moved back), safe for several
processes at once. Ownership of keys in flight is :mod:`doccheck.ledger._claims`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from doccheck.domain import ProductState, SubmissionState
from doccheck.ledger._base import Database, dump
from doccheck.ledger._bulk import Prepare, write_submitting
from doccheck.ledger._in_list import one_of
from doccheck.ledger._merge import PRODUCTS
from doccheck.ledger._money import record_charge
from doccheck.ledger._outcomes import Outcomes
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import OutcomeRow, SubmissionRow, utcnow


class Submissions:
    """Read and move submissions; ``mark_submitted`` also creates the check's outcomes."""

    def __init__(self, db: Database, outcomes: Outcomes) -> None:
        self.db = db
        self.session = db.session
        self.outcomes = outcomes

    def submission_for_key(self, idempotency_key: str) -> SubmissionRow | None:
        """The submission of a key, whatever its state (None when never seen)."""
        with self.session() as s:
            return s.exec(select(SubmissionRow).where(SubmissionRow.idempotency_key == idempotency_key)).first()

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

        A group of one of the one route to ``submitting``, :func:`~doccheck.ledger._bulk.write_submitting`.
        """
        with self.db.engine.begin() as conn:
            write_submitting(conn, [Prepare(idempotency_key, campaign, document_id, tuple(products), mode)], utcnow())

    def mark_upload_created(self, idempotency_key: str, upload_id: str) -> None:
        """Remember the upload id before the bytes are sent, so a resume can create the
        check from it (or replay) instead of taking another of the 50 waiting slots."""
        t = table_of(SubmissionRow)
        with self.db.engine.begin() as conn:  # conditional: a submitted row is never moved back
            conn.execute(
                update(t)
                .where(t.c.idempotency_key == idempotency_key, t.c.state != SubmissionState.SUBMITTED)
                .values(upload_id=upload_id, state=SubmissionState.UPLOADING, updated_at=utcnow())
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
        data = dump(check)
        check_id = str(data["id"])
        t = table_of(SubmissionRow)
        with self.db.engine.connect() as conn:
            current = conn.execute(
                select(t.c.campaign, t.c.submitted_at).where(t.c.idempotency_key == idempotency_key)
            ).first()
            conn.rollback()
        campaign = current.campaign if current is not None else None
        self._create_outcomes(data, campaign)
        now = utcnow()
        fields: dict[str, Any] = {
            "state": SubmissionState.SUBMITTED,
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
        with self.db.engine.begin() as conn:
            if current is None:  # a check recorded without mark_submitting (tools, tests)
                conn.execute(
                    insert(t).values(
                        idempotency_key=idempotency_key,
                        campaign="",
                        attempts=1,
                        created_at=now,
                        document_id=str((data.get("metadata") or {}).get("document_id", "")),
                        products=list(data.get("products") or []),
                        submitted_at=now,
                        **fields,
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
        o = table_of(OutcomeRow)
        fresh = all(
            str((data.get(p) or {}).get("status") or ProductState.PROCESSING) == ProductState.PROCESSING
            for p in products
        )
        if fresh:
            now = utcnow()
            try:
                with self.db.engine.begin() as conn:
                    if conn.execute(select(o.c.id).where(o.c.check_id == check_id).limit(1)).first() is None:
                        conn.execute(
                            insert(o),
                            [
                                {
                                    "check_id": check_id,
                                    "product": p,
                                    "campaign": campaign,
                                    "status": ProductState.PROCESSING.value,
                                    "fetched": False,
                                    "raw": dict(data.get(p) or {"status": "processing"}),
                                    "updated_at": now,
                                }  # fmt: skip
                                for p in products
                            ],
                        )
                        return
            except IntegrityError:
                pass  # created concurrently: merge below
        with self.session() as s:
            self.outcomes.apply_check(s, data, source="poll", campaign=campaign)  # learnt from the API answer

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
        t = table_of(SubmissionRow)
        for attempt in range(2):
            now = utcnow()
            try:
                with self.db.engine.begin() as conn:
                    # One conditional UPDATE, not read-then-write: under PostgreSQL's read
                    # committed a check recorded meanwhile by another process must win.
                    done = conn.execute(
                        update(t)
                        .where(t.c.idempotency_key == idempotency_key, t.c.state != SubmissionState.SUBMITTED)
                        .values(**fields, updated_at=now)
                    ).rowcount
                    if (
                        not done
                        and conn.execute(select(t.c.id).where(t.c.idempotency_key == idempotency_key)).first() is None
                    ):
                        conn.execute(
                            insert(t).values(
                                idempotency_key=idempotency_key,
                                campaign=fields.get("campaign", ""),
                                document_id=fields.get("document_id", ""),
                                products=fields.get("products", []),
                                **{k: v for k, v in fields.items() if k not in ("campaign", "document_id", "products")},
                                attempts=0,
                                replayed=False,
                                created_at=now,
                                updated_at=now,
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
                rows = s.exec(select(SubmissionRow).where(col(SubmissionRow.check_id).in_(ids[i : i + 500]))).all()
                for row in rows:
                    row.last_polled_at = now
                    s.add(row)


# -- named reads for the packages above (session first, Prefect's ``server/models`` shape) --------


def in_doubt(session: Session, campaign: str, document_ids: Iterable[str] | None = None) -> list[SubmissionRow]:
    """The campaign's submissions in doubt (an earlier request may have made a billed check),
    only of ``document_ids`` when given."""
    stmt = select(SubmissionRow).where(
        SubmissionRow.campaign == campaign, SubmissionRow.state == SubmissionState.IN_DOUBT
    )
    wanted = None if document_ids is None else set(document_ids)
    return [r for r in session.exec(stmt).all() if wanted is None or r.document_id in wanted]


def in_doubt_reasons(session: Session, campaign: str, limit: int = 3) -> list[str]:
    """The distinct messages of the campaign's submissions in doubt (each names the mismatch
    and the next step, which a count alone does not)."""
    stmt = (
        select(SubmissionRow.error_message)
        .where(SubmissionRow.campaign == campaign, SubmissionRow.state == SubmissionState.IN_DOUBT)
        .where(col(SubmissionRow.error_message).is_not(None))
        .distinct()
        .limit(limit)
    )
    return [m for m in session.exec(stmt).all() if m]


def campaign_of_check(session: Session, check_id: str) -> str | None:
    """The campaign whose submission made ``check_id`` (None when the ledger does not know it)."""
    found = session.exec(select(SubmissionRow.campaign).where(SubmissionRow.check_id == check_id)).first()
    return str(found) if found else None


def submitted_times(session: Session, keys: Sequence[str]) -> dict[str, Any]:
    """``idempotency key → submitted_at`` of these keys (the keys never submitted left out)."""
    stmt = select(SubmissionRow.idempotency_key, SubmissionRow.submitted_at)
    return dict(session.exec(stmt.where(one_of(col(SubmissionRow.idempotency_key), keys, session))).all())
