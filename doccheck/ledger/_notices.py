"""What the service said went wrong with a run's results, for the printed summary.

Two lists, each bounded (a summary is read by a person): the failed products with the
service's own words (``error_code`` and ``error_message``, whatever shape ``error`` had),
and the deliveries that contradicted a final status with what the service said when the
check was fetched (invariant 11). The report tables carry every row; these are the first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import and_, case, select
from sqlalchemy.orm import Session
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement

from doccheck.domain import ProductState
from doccheck.ledger._in_list import one_of
from doccheck.ledger._sqltypes import table_of
from doccheck.ledger._tables import ContradictionRow, DocumentRow, OutcomeRow, SubmissionRow

#: Lines of each list in a summary (the reports hold them all).
NOTICE_LIMIT = 20

_outs, _docs, _subs = table_of(OutcomeRow), table_of(DocumentRow), table_of(SubmissionRow)
_contra = table_of(ContradictionRow)


def _run_documents(run_id: str) -> Select[Any]:
    """``(document_id, check_id)`` of the run's submitted documents."""
    return (
        select(_docs.c.document_id, _subs.c.check_id)
        .join(_subs, _subs.c.idempotency_key == _docs.c.idempotency_key)
        .where(_docs.c.run_id == run_id, _subs.c.check_id.is_not(None))
    )


def product_failures(s: Session, run_id: str, limit: int = NOTICE_LIMIT) -> list[dict[str, Any]]:
    """The run's failed products: document, product, the service's code and message."""
    docs = _run_documents(run_id).subquery()
    stmt = (
        select(docs.c.document_id, _outs.c.product, _outs.c.error_code, _outs.c.error_message)
        .join(_outs, _outs.c.check_id == docs.c.check_id)
        .where(_outs.c.status == ProductState.FAILED)
        .order_by(docs.c.document_id, _outs.c.product)
        .limit(limit)
    )
    return [
        {"document_id": d, "product": p, "error_code": code, "error_message": message}
        for d, p, code, message in s.execute(stmt).all()
    ]


def _settled() -> ColumnElement[str | None]:
    """What the service said after a contradiction: the outcome's status once fetched again
    (a contradiction unfetches it; only a GET fetches it back), else NULL."""
    return case((_outs.c.fetched.is_(True), _outs.c.status), else_=None)


def contradictions(s: Session, run_id: str, limit: int = NOTICE_LIMIT) -> list[dict[str, Any]]:
    """Deliveries of the run's checks that contradicted a final status, and how each was settled."""
    docs = _run_documents(run_id).subquery()
    stmt = (
        select(docs.c.document_id, _contra.c.product, _contra.c.held_status, _contra.c.delivered_status, _settled())
        .join(_contra, _contra.c.check_id == docs.c.check_id)
        .join(_outs, and_(_outs.c.check_id == _contra.c.check_id, _outs.c.product == _contra.c.product))
        .order_by(_contra.c.id)
        .limit(limit)
    )
    return [
        {"document_id": d, "product": p, "held": held, "delivered": delivered, "settled": settled}
        for d, p, held, delivered, settled in s.execute(stmt).all()
    ]


def contradiction_notes(s: Session, check_ids: Iterable[str]) -> dict[tuple[str, str], str]:
    """``(check_id, product) → note`` for the report tables: the last contradiction of each."""
    ids = sorted(set(check_ids))
    notes: dict[tuple[str, str], str] = {}
    for i in range(0, len(ids), 500):
        stmt = (
            select(_contra.c.check_id, _contra.c.product, _contra.c.held_status, _contra.c.delivered_status,
                   _settled())
            .join(_outs, and_(_outs.c.check_id == _contra.c.check_id, _outs.c.product == _contra.c.product))
            .where(one_of(_contra.c.check_id, ids[i : i + 500], s))
            .order_by(_contra.c.id)
        )  # fmt: skip
        for check_id, product, held, delivered, settled in s.execute(stmt).all():
            notes[(check_id, product)] = (
                f"a delivery said {delivered} after {held}; the service says {settled or 'not fetched yet'}"
            )
    return notes


def describe_contradiction(c: dict[str, Any]) -> str:
    """One line for a person: what was held, what a delivery said, what the service says."""
    settled = c.get("settled") or "not fetched yet"
    return (
        f"{c['document_id']} {c['product']}: a delivery said {c['delivered']} after {c['held']}; "
        f"the service says {settled}"
    )


def describe_failure(f: dict[str, Any]) -> str:
    """One line for a person: the document, the product and the service's own words."""
    words = ": ".join(w for w in (f.get("error_code"), f.get("error_message")) if w) or "no reason given"
    return f"{f['document_id']} {f['product']} failed: {words}"
