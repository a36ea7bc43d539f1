"""Webhook events: stored once by the receiver, applied later to the outcomes.

Functions taking the session first (:class:`~doccheck.ledger._facade.Ledger` opens the
transaction). Storing and applying are separate steps so the receiver answers fast and a crash
between them loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from doccheck.client import Event, ServiceProfile, current_profile, normalise_check
from doccheck.ledger._base import dump, parse_time
from doccheck.ledger._merge import APPLIED, CONTRADICTED, TERMINAL, event_product_data, merge_product, product_fields
from doccheck.ledger._money import insert_many_ignore, refresh_refund
from doccheck.ledger._outcomes import rows_for
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import ContradictionRow, OutcomeRow, SubmissionRow, WebhookEventRow, utcnow

_events = table_of(WebhookEventRow)


def record_events(session: Session, deliveries: Sequence[tuple[Event, bytes]]) -> list[bool]:
    """Store verified deliveries in the session's ONE transaction (the receiver's group commit):
    for each, True when stored, False for an event id already stored (earlier, or earlier in
    this list). ``INSERT … ON CONFLICT DO NOTHING``: safe against another process storing the
    same id at the same moment.

    ``raw`` is the verified body; it is what is stored (not a re-serialisation), so fields this
    code does not model are kept."""
    rows: dict[str, dict[str, Any]] = {}
    ids: list[str] = []
    for event, raw in deliveries:
        values = _event_values(event, raw)
        ids.append(values["event_id"])
        rows.setdefault(values["event_id"], values)  # the first of an id in the group is the one kept
    inserted = insert_many_ignore(session.connection(), _events, list(rows.values()), "event_id")
    first = {event_id: i for i, event_id in reversed(list(enumerate(ids)))}
    return [event_id in inserted and first[event_id] == i for i, event_id in enumerate(ids)]


def apply_events(session: Session, size: int) -> int:
    """Turn up to ``size`` stored, not yet applied events into outcomes (oldest first); returns
    how many were applied. The caller goes a chunk per transaction (the receiver keeps inserting
    meanwhile: :meth:`~doccheck.ledger._facade.Ledger.apply_pending_events`).

    An event for a check the ledger does not know yet (the receiver was faster than
    ``mark_submitted``, or a crash lost that write) still creates its outcome row, so
    the resume finds it instead of waiting for a delivery that already happened.
    """
    stmt = select(WebhookEventRow).where(WebhookEventRow.applied == False)  # noqa: E712
    events = session.exec(stmt.order_by(col(WebhookEventRow.id)).limit(size)).all()
    for ev in events:
        _apply_event(session, ev)
        ev.applied = True
        ev.payload = {}  # the raw body (document metadata) is not kept once applied (docs/data.md)
        session.add(ev)
    return len(events)


def _apply_event(s: Session, ev: WebhookEventRow) -> None:
    payload = ev.payload or {}
    check = payload.get("check") or {}
    check_id = ev.check_id or check.get("id")
    if not check_id:
        return
    profile = current_profile()
    named = ev.product or payload.get("product")
    product = profile.product_word(named) if named else None
    if product is None:  # a value the profile does not know: never a product of its own
        _fetch_check(s, check_id, ev)
        return
    pdata = event_product_data(str(ev.type), _read_through(payload, profile), product)
    if pdata is None:
        return
    sub = s.exec(select(SubmissionRow).where(SubmissionRow.check_id == check_id)).first()
    row = rows_for(s, check_id, [product], sub.campaign if sub else None)[product]
    held = row.status
    verdict = merge_product(
        row,
        product_fields(product, pdata),
        source="webhook",
        raw=pdata,
        completed_at=parse_time(pdata.get("completed_at")) or ev.created_at or ev.received_at,
    )
    row.event_at = row.event_at or ev.received_at
    s.add(row)
    if verdict == CONTRADICTED:
        s.add(ContradictionRow(check_id=check_id, product=product, event_id=ev.event_id,
                               held_status=held, delivered_status=str(pdata["status"])))  # fmt: skip
    s.flush()
    if verdict == APPLIED:
        refresh_refund(s.connection(), check_id)  # a failed product is refunded


def _fetch_check(s: Session, check_id: str, ev: WebhookEventRow) -> None:
    """An event that names no product this side knows: the check's unfinished products
    are marked as told about, so the next poll round fetches the check now."""
    rows = s.exec(select(OutcomeRow).where(OutcomeRow.check_id == check_id)).all()
    for row in rows:
        if row.status not in TERMINAL:
            row.event_at = ev.received_at
            s.add(row)


def unapplied_event_count(session: Session) -> int:
    """How many stored events wait to be applied."""
    return session.exec(
        select(func.count()).select_from(WebhookEventRow).where(WebhookEventRow.applied == False)  # noqa: E712
    ).one()


def stored_events(session: Session, check_id: str | None = None) -> list[WebhookEventRow]:
    """Stored events (all, or of one check), oldest first."""
    stmt = select(WebhookEventRow).order_by(col(WebhookEventRow.id))
    if check_id is not None:
        stmt = stmt.where(WebhookEventRow.check_id == check_id)
    return list(session.exec(stmt).all())


def _event_values(event: Event, raw: bytes) -> dict[str, Any]:
    """The ``webhook_events`` row of a verified delivery: the raw body as sent, parsed."""
    try:
        payload = json.loads(raw)
    except (ValueError, TypeError):
        payload = dump(event)
    check = getattr(event, "check", None)
    return {
        "event_id": str(event.id),
        "type": str(event.type),
        "product": getattr(event, "product", None),
        "check_id": getattr(check, "id", None),
        "created_at": parse_time(getattr(event, "created_at", None)),
        "received_at": utcnow(),
        "payload": payload if isinstance(payload, dict) else {"body": payload},
        "applied": False,
    }


def _read_through(payload: dict[str, Any], profile: ServiceProfile) -> dict[str, Any]:
    """The event with its check summary read through the service profile (status words,
    ``error`` of any shape, score scales), as a GET answer is."""
    check = payload.get("check")
    if not isinstance(check, dict):
        return payload
    return {**payload, "check": normalise_check(check, profile)}
