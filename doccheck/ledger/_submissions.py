"""Submissions: the state machine of one idempotency key (planned → submitting →
uploading → submitted, or failed / skipped_budget).

Functions taking the session first; :class:`~doccheck.ledger._facade.Ledger` opens the
transaction and calls them. The transitions are what guarantees "at most one billed check per
row", so they live here, each one short, conditional transaction (a submitted row is never moved
back), safe for several processes at once. Ownership of keys in flight is :mod:`doccheck.ledger._claims`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import insert, update
from sqlmodel import Session, col, select

from doccheck.domain import SubmissionState
from doccheck.ledger._bulk import Prepare, write_submitting
from doccheck.ledger._in_list import one_of
from doccheck.ledger._money import record_charge
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import SubmissionRow, utcnow


def submission_for_key(session: Session, idempotency_key: str) -> SubmissionRow | None:
    """The submission of a key, whatever its state (None when never seen)."""
    return session.exec(select(SubmissionRow).where(SubmissionRow.idempotency_key == idempotency_key)).first()


def submissions_for_keys(session: Session, keys: Iterable[str]) -> dict[str, SubmissionRow]:
    """Submissions of many keys at once (the batch pre-check of a rerun)."""
    keys = list(dict.fromkeys(keys))
    found: dict[str, SubmissionRow] = {}
    for i in range(0, len(keys), 500):
        stmt = select(SubmissionRow).where(col(SubmissionRow.idempotency_key).in_(keys[i : i + 500]))
        for row in session.exec(stmt).all():
            found[row.idempotency_key] = row
    return found


def mark_submitting(
    session: Session,
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
    prepare = Prepare(idempotency_key, campaign, document_id, tuple(products), mode)
    write_submitting(session.connection(), [prepare], utcnow())


def mark_upload_created(session: Session, idempotency_key: str, upload_id: str) -> None:
    """Remember the upload id before the bytes are sent, so a resume can create the
    check from it (or replay) instead of taking another of the 50 waiting slots."""
    t = table_of(SubmissionRow)
    session.connection().execute(  # conditional: a submitted row is never moved back
        update(t)
        .where(t.c.idempotency_key == idempotency_key, t.c.state != SubmissionState.SUBMITTED)
        .values(upload_id=upload_id, state=SubmissionState.UPLOADING, updated_at=utcnow())
    )


class Before(NamedTuple):
    """What ``mark_submitted`` reads of a key's row before it writes: its campaign (the
    outcomes' and the charge's) and when it was first submitted (kept)."""

    campaign: str
    submitted_at: datetime | None


def submission_before(session: Session, idempotency_key: str) -> Before | None:
    """The key's row as ``mark_submitted`` needs it (None: the check is recorded without
    ``mark_submitting``, tools and tests)."""
    t = table_of(SubmissionRow)
    found = (
        session.connection()
        .execute(select(t.c.campaign, t.c.submitted_at).where(t.c.idempotency_key == idempotency_key))
        .first()
    )
    return None if found is None else Before(found.campaign, found.submitted_at)


def record_submitted(
    session: Session,
    idempotency_key: str,
    data: Mapping[str, Any],
    before: Before | None,
    *,
    replayed: bool,
    mode: str | None = None,
    upload_id: str | None = None,
) -> None:
    """The ``submitted`` row of the check ``data`` (a service answer, dumped) and its charge
    (once per check id); the check's outcomes are written before, in their own transaction
    (:meth:`~doccheck.ledger._facade.Ledger.mark_submitted` says why)."""
    check_id = str(data["id"])
    t = table_of(SubmissionRow)
    now = utcnow()
    fields: dict[str, Any] = {
        "state": SubmissionState.SUBMITTED,
        "check_id": check_id,
        "cost_cents": (data.get("cost") or {}).get("total_cents"),
        "words": data.get("words"),
        "replayed": replayed,
        "error_code": None,
        "error_message": None,
        "updated_at": now,
    }
    if mode is not None:
        fields["mode"] = mode
    if upload_id is not None:
        fields["upload_id"] = upload_id
    conn = session.connection()
    if before is None:  # a check recorded without mark_submitting (tools, tests)
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
            .values(**fields, submitted_at=before.submitted_at or now)
        )
    record_charge(conn, check_id, before.campaign if before is not None else None, data.get("cost"))


def mark_submit_failed(
    session: Session,
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

    One conditional UPDATE, not read-then-write: under PostgreSQL's read committed a check
    recorded meanwhile by another process must win. A key without a row gets one; an
    ``IntegrityError`` means another process inserted it meanwhile: the caller tries once more
    in a new transaction (:meth:`~doccheck.ledger._facade.Ledger.mark_submit_failed`).
    """
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
    now = utcnow()
    conn = session.connection()
    done = conn.execute(
        update(t)
        .where(t.c.idempotency_key == idempotency_key, t.c.state != SubmissionState.SUBMITTED)
        .values(**fields, updated_at=now)
    ).rowcount
    if not done and conn.execute(select(t.c.id).where(t.c.idempotency_key == idempotency_key)).first() is None:
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


def mark_polled(session: Session, check_ids: Iterable[str]) -> None:
    """Remember when checks were last polled (spaces out the polling fallback)."""
    ids = list(check_ids)
    now = utcnow()
    for i in range(0, len(ids), 500):
        rows = session.exec(select(SubmissionRow).where(col(SubmissionRow.check_id).in_(ids[i : i + 500]))).all()
        for row in rows:
            row.last_polled_at = now
            session.add(row)


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


def submitted_times(session: Session, keys: Sequence[str]) -> dict[str, datetime | None]:
    """``idempotency key → submitted_at`` of these keys (the keys never submitted left out)."""
    stmt = select(SubmissionRow.idempotency_key, SubmissionRow.submitted_at)
    return dict(session.exec(stmt.where(one_of(col(SubmissionRow.idempotency_key), keys, session))).all())
