"""The pure merge rules of outcomes: how one product object of the service (from a poll
or a webhook event) changes a product's outcome row.

Why pure functions: these rules decide what the reports say (a final status never goes
back to processing, a bare event after the full result adds nothing, the first final
status says whether it was learnt by webhook or poll). Kept free of sessions so they
are tested without a database (``tests/unit/ledger/test_outcome_merge.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from doccheck import domain
from doccheck.client import read_error
from doccheck.domain import ProductState
from doccheck.ledger._tables import OutcomeRow, utcnow

PRODUCTS = domain.PRODUCTS
TERMINAL = domain.TERMINAL_PRODUCT_STATES


def error_parts(error: Any) -> tuple[str | None, str | None]:
    """Code and message of an ``error`` of any shape (the service profile's reading)."""
    if not error:
        return None, None
    if not isinstance(error, (Mapping, str, list)):
        return getattr(error, "code", None), getattr(error, "message", None)
    found = read_error(error) or {}
    return found.get("code"), found.get("message")


def product_fields(product: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The outcome columns of one product object (``check.ai`` / ``check.similarity``).

    Returns ``fetched=True`` only when the object carries the product's full result, so
    that an event's bare ``{"status": "completed"}`` still triggers one GET of the check.
    """
    status = str(data.get("status") or "processing")
    code, message = error_parts(data.get("error"))
    fields: dict[str, Any] = {"status": status, "error_code": code, "error_message": message}
    if status == ProductState.FAILED:
        fields["fetched"] = True
    if product == "ai":
        fields["score"] = data.get("score")
        fields["label"] = data.get("label")
        if status == ProductState.COMPLETED:
            fields["fetched"] = data.get("score") is not None
    elif product == "similarity":
        sources = data.get("sources")
        fields["score"] = data.get("score")
        fields["matched_words"] = data.get("matched_words")
        if sources is not None:
            fields["sources"] = [dict(s) for s in sources]
            fields["source_count"] = len(sources)
        if status == ProductState.COMPLETED:
            fields["fetched"] = data.get("score") is not None and sources is not None
    else:  # a product this code does not know yet: keep the raw JSON, treat status as final
        fields["fetched"] = status in TERMINAL
    return fields


#: What :func:`merge_product` did with an answer.
APPLIED, KEPT, CONTRADICTED = "applied", "kept", "contradicted"
#: Sources that are the service's current state of the check (a GET, the create answer);
#: a webhook delivery is only what the service said at some moment, in any order.
CURRENT_STATE_SOURCES = frozenset({"poll"})


def merge_product(
    row: OutcomeRow,
    fields: Mapping[str, Any],
    *,
    source: str,
    raw: Mapping[str, Any],
    completed_at: datetime | None,
) -> str:
    """Merge one product's ``fields`` (from :func:`product_fields`) into its outcome row, in
    place: the one place a result's state is settled (invariant 11). Returns
    :data:`APPLIED`, :data:`KEPT` (nothing to change) or :data:`CONTRADICTED`.

    ``source`` (``webhook`` | ``poll``) is recorded with the first final status. A delivery
    naming another final status than the row's (``check.failed`` retried after the retry
    that completed) changes nothing but ``fetched``: the check is fetched next, and what
    the service says now (a ``poll``) settles the row, whatever order deliveries came in.
    """
    status = fields["status"]
    was_terminal = row.status in TERMINAL
    if was_terminal and status not in TERMINAL:
        return KEPT  # never go back to processing
    if was_terminal and status != row.status and source not in CURRENT_STATE_SOURCES:
        row.fetched = False  # never backwards on a delivery's word: the GET settles it
        row.updated_at = utcnow()
        return CONTRADICTED
    if was_terminal and not row.fetched and source not in CURRENT_STATE_SOURCES:
        return KEPT  # a final status awaiting its GET: only the service's current state settles it
    if row.status in TERMINAL and row.fetched and not fields.get("fetched"):
        return KEPT  # a bare event after the full result adds nothing
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
    return APPLIED


def event_product_data(event_type: str, payload: Mapping[str, Any], product: str) -> dict[str, Any] | None:
    """The product object an event stands for (``check.completed`` / ``check.failed``), or
    None for an event type that says nothing final about a product."""
    check = payload.get("check") or {}
    pdata = dict(check.get(product) or {})
    if event_type == "check.failed":
        pdata["status"] = ProductState.FAILED.value
        if not pdata.get("error") and payload.get("error"):
            pdata["error"] = payload["error"]
    elif event_type == "check.completed":
        pdata["status"] = ProductState.COMPLETED.value
    else:
        return None
    return pdata
