"""Outcomes: one row per (check, product), merged from polls and webhook events.

Functions taking the session first (:class:`~doccheck.ledger._facade.Ledger` opens the
transaction). The rules of the merge are pure functions in :mod:`doccheck.ledger._merge`; this
module finds or creates the rows (safe against another process creating them at the same
moment) and records money.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import insert
from sqlalchemy import select as sa_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from doccheck.domain import ProductState
from doccheck.ledger._base import CheckLike, dump, parse_time
from doccheck.ledger._merge import PRODUCTS, merge_product, product_fields
from doccheck.ledger._money import record_charge
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import OutcomeRow, SubmissionRow, utcnow


def rows_for(session: Session, check_id: str, products: Sequence[str], campaign: str | None) -> dict[str, OutcomeRow]:
    """The outcome rows of a check's products, creating the missing ones in one savepoint
    (another process may create them at the same moment: then they are re-read)."""
    stmt = select(OutcomeRow).where(OutcomeRow.check_id == check_id)
    rows = {r.product: r for r in session.exec(stmt).all()}
    missing = [p for p in products if p not in rows]
    if missing:
        new = [OutcomeRow(check_id=check_id, product=p, campaign=campaign) for p in missing]
        try:
            with session.begin_nested():
                session.add_all(new)
                session.flush()
            rows.update({r.product: r for r in new})
        except IntegrityError:
            rows = {r.product: r for r in session.exec(stmt).all()}
    for row in rows.values():
        if campaign and not row.campaign:
            row.campaign = campaign
    return rows


def apply_check(
    session: Session,
    data: Mapping[str, Any],
    *,
    source: str,
    campaign: str | None,
    submission: SubmissionRow | None = None,
) -> int:
    """Merge a check (a service answer, dumped) into its outcome rows, product by product, and
    record its money; returns how many products changed (status or fetched)."""
    check_id = data["id"]
    products = list(data.get("products") or [p for p in PRODUCTS if data.get(p)])
    rows = rows_for(session, check_id, products, campaign)
    changed = 0
    for product in products:
        pdata = data.get(product) or {"status": "processing"}
        row = rows[product]
        before = (row.status, row.fetched)
        completed_at = parse_time(pdata.get("completed_at")) or parse_time(data.get("completed_at"))
        merge_product(row, product_fields(product, pdata), source=source, raw=pdata, completed_at=completed_at)
        session.add(row)
        changed += (row.status, row.fetched) != before
    cost = (data.get("cost") or {}).get("total_cents")
    if cost is not None:
        sub = submission
        if sub is None:
            sub = session.exec(select(SubmissionRow).where(SubmissionRow.check_id == check_id)).first()
        if sub is not None and sub.cost_cents != cost:
            sub.cost_cents = cost  # refunds of failed products show up here
            session.add(sub)
    session.flush()
    owner = campaign or (submission.campaign if submission is not None else None)
    record_charge(session.connection(), check_id, owner, data.get("cost"))  # once per check id
    return changed


def record_check(session: Session, check: CheckLike, source: str = "poll") -> int:
    """Store a check fetched with GET /checks/{id}; returns how many products changed."""
    data = dump(check)
    sub = session.exec(select(SubmissionRow).where(SubmissionRow.check_id == data["id"])).first()
    return apply_check(session, data, source=source, campaign=sub.campaign if sub else None, submission=sub)


def insert_fresh(session: Session, data: Mapping[str, Any], campaign: str | None) -> bool:
    """The outcome rows of a new check in one bulk insert, in the common case (none exist yet,
    all products processing); False when that is not the case (then :func:`apply_check` merges).
    ``IntegrityError`` when another process created them meanwhile (merge, in a new transaction)."""
    check_id = str(data["id"])
    products = list(data.get("products") or [p for p in PRODUCTS if data.get(p)])
    fresh = all(
        str((data.get(p) or {}).get("status") or ProductState.PROCESSING) == ProductState.PROCESSING for p in products
    )
    if not fresh:
        return False
    o = table_of(OutcomeRow)
    conn = session.connection()
    if conn.execute(sa_select(o.c.id).where(o.c.check_id == check_id).limit(1)).first() is not None:
        return False
    now = utcnow()
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
    return True
