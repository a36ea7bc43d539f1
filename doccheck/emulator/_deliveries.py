"""Webhook deliveries: signed POSTs, retried with exponential backoff in service time.

One :class:`Delivery` per event. Each attempt signs the fixed body afresh with the
account's CURRENT secret and the service clock's ``t`` (so a rotation applies to retries),
re-vets the target address (private targets are never called unless allowed), does not
follow redirects and gives up after 10 s. A ``webhook_drop_rate`` fault swallows an attempt
as if the network lost it; it counts as a failed attempt and is retried like any other.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from doccheck.emulator._clock import VirtualClock, iso
from doccheck.emulator._faults import Faults
from doccheck.emulator._scheduler import Scheduler
from doccheck.emulator._senders import sign
from doccheck.emulator._store import Store
from doccheck.emulator._webhook_urls import WebhookUrlError, vet_url
from doccheck.webhooks import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER

MAX_CONCURRENT_DELIVERIES = 50
#: Deliveries kept in the emulator's state (the oldest are forgotten first).
MAX_RECORDED_DELIVERIES = 10_000


@dataclass
class Delivery:
    delivery_id: str
    event_id: str
    type: str
    product: str
    check_id: str
    api_key: str
    override_url: str | None
    body: bytes
    url: str | None = None
    attempts: int = 0
    status: str = "pending"  # pending | in_flight | succeeded | failed | refused | skipped
    last_http_status: int | None = None
    last_error: str | None = None
    next_attempt_at: float | None = None
    style: str = "default"  # how it is signed (doccheck.emulator._senders.sign)

    def state(self) -> dict[str, Any]:
        """This delivery's entry in ``GET /_emulator/state``."""
        return {
            "event_id": self.event_id,
            "delivery_id": self.delivery_id,
            "type": self.type,
            "product": self.product,
            "check_id": self.check_id,
            "url": self.url,
            "attempts": self.attempts,
            "status": self.status,
            "last_http_status": self.last_http_status,
            "last_error": self.last_error,
        }


class DeliveryConfig(Protocol):
    """The settings a dispatcher reads (``EmulatorConfig`` has them)."""

    @property
    def allow_private_webhooks(self) -> bool: ...
    @property
    def offline(self) -> bool: ...
    @property
    def delivery_retries(self) -> int: ...
    @property
    def delivery_backoff_s(self) -> float: ...
    @property
    def delivery_timeout_s(self) -> float: ...


Spawn = Callable[[Coroutine[Any, Any, Any]], "asyncio.Task[Any]"]


class Dispatcher:
    """Sends deliveries; attempts are scheduled on the emulator's scheduler.

    Why the parts and not the whole emulator: the dispatcher needs the clock, the store
    (accounts and their webhooks), the scheduler, the faults and a way to start a task,
    and receiving only those keeps ``runtime`` (which builds it) out of its imports.
    """

    def __init__(self, config: DeliveryConfig, *, clock: VirtualClock, store: Store, scheduler: Scheduler,
                 faults: Faults, spawn: Spawn) -> None:  # fmt: skip
        self.config = config
        self.clock = clock
        self.store = store
        self.scheduler = scheduler
        self.faults = faults
        self.spawn = spawn
        # The record behind /_emulator/state and tests; bounded so a long-running sandbox does
        # not grow without end. Pending attempts hold their own reference on the scheduler.
        self.deliveries: deque[Delivery] = deque(maxlen=MAX_RECORDED_DELIVERIES)
        self._client: httpx.AsyncClient | None = None
        # Attempts queue here, not in the connection pool, so the 10 s receiver timeout
        # measures the receiver and not our own backlog.
        self._slots: asyncio.Semaphore | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                timeout=httpx.Timeout(self.config.delivery_timeout_s, pool=None),
                trust_env=False,
                limits=httpx.Limits(max_connections=MAX_CONCURRENT_DELIVERIES),
            )
        return self._client

    def use_transport(self, transport: httpx.AsyncBaseTransport) -> None:
        """Deliver through ``transport`` (an in-process receiver's ASGI app, in tests)."""
        self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False, transport=transport,
                                         timeout=httpx.Timeout(self.config.delivery_timeout_s, pool=None))  # fmt: skip

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    def enqueue(self, api_key: str, check_id: str, product: str, event_type: str, body: bytes,
                event_id: str, override_url: str | None, *, delay: float = 0.0, style: str = "default") -> Delivery:  # fmt: skip
        """Record a delivery and make its first attempt due in ``delay`` service seconds."""
        delivery = Delivery(
            delivery_id=str(uuid.uuid4()),
            event_id=event_id,
            type=event_type,
            product=product,
            check_id=check_id,
            api_key=api_key,
            override_url=override_url,
            body=body,
            style=style,
        )
        self.deliveries.append(delivery)
        self._schedule(delivery, self.clock.now() + max(0.0, delay))
        return delivery

    def _schedule(self, delivery: Delivery, due: float) -> None:
        delivery.next_attempt_at = due
        self.scheduler.at(due, lambda: self.spawn(self.attempt(delivery)), f"deliver {delivery.event_id}")

    async def attempt(self, delivery: Delivery) -> None:
        """One attempt; an unexpected error is reported in one line and ends the delivery."""
        try:
            await self._attempt(delivery)
        except Exception as exc:  # noqa: BLE001  # pragma: no cover - a bug must not kill the loop silently
            delivery.status, delivery.last_error = "failed", f"emulator error: {type(exc).__name__}"
            print(f"emulator: delivery {delivery.delivery_id} crashed: {type(exc).__name__}", flush=True)

    async def _attempt(self, delivery: Delivery) -> None:
        """One attempt; on failure schedule the next one (or give up)."""
        account = self.store.accounts.get(delivery.api_key)
        webhook = account.webhook if account else None
        if webhook is None:
            delivery.status, delivery.last_error = "skipped", "no webhook endpoint configured"
            return
        url = delivery.override_url or webhook.url
        delivery.url = url
        try:
            await vet_url(url, allow_private=self.config.allow_private_webhooks, offline=self.config.offline)
        except WebhookUrlError as exc:
            delivery.status, delivery.last_error = "refused", str(exc)
            return
        delivery.attempts += 1
        delivery.status = "in_flight"
        http_status: int | None = None
        error: str | None = None
        if self.faults.roll(self.faults.settings.webhook_drop_rate):
            error = "dropped (injected fault)"
        else:
            headers = {
                "Content-Type": "application/json",
                EVENT_HEADER: delivery.type,
                DELIVERY_HEADER: delivery.delivery_id,
                "User-Agent": "doccheck-emulator-webhooks/1",
            }
            if self._slots is None:
                self._slots = asyncio.Semaphore(MAX_CONCURRENT_DELIVERIES)
            try:
                async with self._slots:  # signed when sent: current secret, fresh t
                    headers[SIGNATURE_HEADER] = sign(
                        delivery.style, webhook.secret, self.clock.now(), delivery.body, delivery.attempts
                    )
                    response = await self.client.post(url, content=delivery.body, headers=headers)
                http_status = response.status_code
                if not 200 <= http_status < 300:
                    error = f"receiver answered {http_status}"
            except httpx.TimeoutException:
                error = "timed out after 10 s"
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}"
        delivery.last_http_status = http_status
        delivery.last_error = error
        ok = error is None
        webhook.last_delivery = {
            "status": "succeeded" if ok else "failed",
            "http_status": http_status,
            "at": iso(self.clock.now()),
            "event_id": delivery.event_id,
            "delivery_id": delivery.delivery_id,
            "attempt": delivery.attempts,
            "url": url,
            "error": error,
        }
        if ok:
            delivery.status, delivery.next_attempt_at = "succeeded", None
        elif delivery.attempts <= self.config.delivery_retries:
            delivery.status = "pending"
            backoff = self.config.delivery_backoff_s * 2 ** (delivery.attempts - 1)
            self._schedule(delivery, self.clock.now() + backoff)
        else:
            delivery.status, delivery.next_attempt_at = "failed", None
