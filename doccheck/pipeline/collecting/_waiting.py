"""How to wait for results: where they come from decides how soon and how often to poll.

Why: with an account webhook the service tells us when a product finished, so polling
is only the fallback for deliveries that never came and waits out a grace period first.
With no webhook nothing will ever be delivered: waiting out that grace only makes a
notebook user stare at a cell for 30 s while the service finished in half a second.
Then we poll from the start, soon at first and less often as the wait grows, so a short
run ends in about a second and a long one does not hammer the service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from doccheck.client import DocCheckError, NotFoundError, Webhook

__all__ = ["PollSchedule", "WebhookLookup", "expects_webhooks", "verify_access"]


class WebhookLookup(Protocol):
    """The one client call this module needs (both clients have it)."""

    async def get_webhook(self) -> Webhook: ...


async def expects_webhooks(client: WebhookLookup) -> bool:
    """True when the account has a webhook endpoint, so completions will be delivered.

    Only "no endpoint" (404) means no webhooks. Any other error reading the endpoint is
    taken as "webhooks may come": the wait then keeps its grace period, which costs time
    but never correctness (polling still completes the run).
    """
    try:
        webhook = await client.get_webhook()
    except NotFoundError:
        return False
    except DocCheckError:
        return True
    return bool(webhook.url)


async def verify_access(client: WebhookLookup) -> None:
    """The start-up check: one request that costs nothing and that the interface shows
    (``GET /webhook``), so a wrong address or key fails once, clearly, before anything is
    recorded, and a service without a list of checks can still run.

    200 (an endpoint) and 404 (no endpoint yet) both prove the address and the key; 401 and
    every other error are raised (the client already retried the transient ones).
    """
    try:
        await client.get_webhook()
    except NotFoundError:
        return


@dataclass
class PollSchedule:
    """Intervals between polls: ``first`` seconds, growing by ``factor`` up to ``ceiling``.

    With ``ceiling <= first`` (or ``factor <= 1``) it is a fixed interval of ``ceiling``.
    """

    ceiling: float
    first: float = 0.25
    factor: float = 2.0

    def __post_init__(self) -> None:
        self._next = min(self.first, self.ceiling) if self.factor > 1 else self.ceiling

    def next_interval(self) -> float:
        """The pause before the next poll (and advance the schedule)."""
        interval = self._next
        self._next = min(self.ceiling, self._next * self.factor) if self.factor > 1 else self.ceiling
        return interval
