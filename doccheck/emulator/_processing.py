"""What happens after a check is accepted: each product finishes on its own.

A product finishes ``processing_seconds`` of service time after creation. It fails with
``product_failure_rate`` (its cents are refunded and it carries ``error``), otherwise its
result (computed off the event loop when the check was accepted, see
:func:`doccheck.emulator._documents.analyse`) is revealed. When every product has finished the check becomes
``completed`` (all completed) or ``failed`` (one failed), ``completed_at`` is set and the
``files`` flags turn true. Each finished product emits its own event.
"""

from __future__ import annotations

import functools
import uuid
from typing import TYPE_CHECKING, Any

from doccheck.emulator._billing import product_cents
from doccheck.emulator._clock import iso
from doccheck.emulator._senders import plan_deliveries
from doccheck.emulator._store import Account, Check

if TYPE_CHECKING:
    from doccheck.emulator._runtime import Emulator


def schedule_products(emu: Emulator, account: Account, check: Check) -> None:
    """Make each requested product due ``processing_seconds`` after creation."""
    due = check.created_at + emu.faults.settings.processing_seconds
    for product in check.products:
        emu.scheduler.at(due, functools.partial(finish_product, emu, account, check, product), f"{check.id}:{product}")


def finish_product(emu: Emulator, account: Account, check: Check, product: str) -> None:
    """Finish one product of ``check`` now, update the check, and emit its event."""
    state = check.product_state(product)
    if state is None or state["status"] != "processing":
        return
    if emu.faults.roll(emu.faults.settings.product_failure_rate):
        error = {"code": "processing_failed", "message": f"the {product} product failed (injected fault)"}
        new_state: dict[str, Any] = {"status": "failed", "error": error}
        refund = product_cents(check.cost, product)
        check.refunded_cents += refund
        account.balance_cents += refund
        account.charged_cents -= refund
    else:
        new_state = check.results.get(product) or {"status": "completed"}
    if product == "ai":
        check.ai = new_state
    else:
        check.similarity = new_state
    states = [check.product_state(p) for p in check.products]
    if all(s is not None and s["status"] != "processing" for s in states):
        failed = [p for p in check.products if (check.product_state(p) or {}).get("status") == "failed"]
        check.status = "failed" if failed else "completed"
        check.completed_at = emu.clock.now()
        if failed:
            check.error = {"code": "product_failed", "message": f"product(s) failed: {', '.join(failed)}"}
        check.files["original"] = True
        check.files["pdf"] = True
        check.files["similarity_pdf"] = bool(check.similarity and check.similarity["status"] == "completed")
    event_type = "check.failed" if new_state["status"] == "failed" else "check.completed"
    event_id = str(uuid.uuid4())
    payload = {
        "id": event_id,
        "object": "event",
        "type": event_type,
        "created_at": iso(emu.clock.now()),
        "product": product,
        "check": check.summary(),
        "error": new_state.get("error"),
    }
    if account.webhook is None and check.webhook_url is None:
        return
    emu.events_made += 1
    for planned in plan_deliveries(emu.profile_of(account.api_key), payload, emu.events_made):
        emu.dispatcher.enqueue(account.api_key, check.id, product, planned.event_type, planned.body,
                               planned.event_id, check.webhook_url, delay=planned.delay, style=planned.style)  # fmt: skip
