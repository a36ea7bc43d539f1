"""Outcomes: one row per (check, product), merged from polls and webhook events.

Part of the :class:`~doccheck.ledger._facade.Ledger` facade. The rules of the merge are
pure functions in :mod:`doccheck.ledger._merge`; this module finds or creates the rows
(safe against another process creating them at the same moment) and records money.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from doccheck.ledger._base import Database, dump, parse_time
from doccheck.ledger._merge import PRODUCTS, merge_product, product_fields
from doccheck.ledger._money import record_charge
from doccheck.ledger._tables import OutcomeRow, SubmissionRow


class Outcomes:
    """Store what a ``GET /checks/{id}`` answered, product by product."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.session = db.session

    def rows_for(
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

    def apply_product(
        self,
        row: OutcomeRow,
        fields: Mapping[str, Any],
        *,
        source: str,
        raw: Mapping[str, Any],
        completed_at: datetime | None,
    ) -> str:
        """Merge one product's fields (:func:`~doccheck.ledger._merge.merge_product`'s verdict)."""
        return merge_product(row, fields, source=source, raw=raw, completed_at=completed_at)

    def apply_check(
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
        rows = self.rows_for(s, check_id, products, campaign)
        changed = 0
        for product in products:
            pdata = data.get(product) or {"status": "processing"}
            row = rows[product]
            before = (row.status, row.fetched)
            completed_at = parse_time(pdata.get("completed_at")) or parse_time(data.get("completed_at"))
            self.apply_product(
                row,
                product_fields(product, pdata),
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
        data = dump(check)
        with self.session() as s:
            sub = s.exec(select(SubmissionRow).where(SubmissionRow.check_id == data["id"])).first()
            return self.apply_check(s, data, source=source, campaign=sub.campaign if sub else None, submission=sub)
