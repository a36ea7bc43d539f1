"""Emit a Prefect event for each verified webhook delivery, over plain HTTP (no ``prefect`` import);
and read the signing secret from a Prefect ``Secret`` block the same way.

Why: a deployment of ``collect_results`` with an event trigger on ``doccheck.check.*`` then
collects results minutes after the service finishes, without polling on a timer. Why not
``prefect.events.emit_event``: the library never imports Prefect (the receiver must run
where Prefect is not installed, and importing it costs seconds and a settings context),
and the events API is a small documented JSON endpoint: ``POST {PREFECT_API_URL}/events``
with a list of events (204). Prefect Cloud wants ``Authorization: Bearer <PREFECT_API_KEY>``.

The event (``prefect.events.schemas.events.Event`` shape)::

    {"id": <uuid>, "occurred": <ISO time>, "event": "doccheck.check.completed",
     "resource": {"prefect.resource.id": "doccheck.check.<check id>",
                  "prefect.resource.name": <check name>, "doccheck.product": "ai",
                  "doccheck.status": "completed", "doccheck.campaign": <campaign>},
     "related": [{"prefect.resource.id": "doccheck.campaign.<campaign>",
                  "prefect.resource.role": "campaign", "prefect.resource.name": <campaign>}],
     "payload": {"service_event_id", "product", "check_status", "error_code"}}

The event id is derived from the service's event id (uuid5), so a redelivery that slips
through never makes two Prefect events. Emission happens after the receiver has answered
(a Starlette background task) and never raises: a Prefect outage is logged, nothing more.
Nothing secret goes into an event: no scores, no text, no signature, no key.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import SecretStr

from doccheck.client import Event, current_profile
from doccheck.config import split_secrets
from doccheck.domain import secrets_accepted_at

log = logging.getLogger(__name__)

EVENT_PREFIX = "doccheck.check."
#: Namespace of the uuid5 that turns a service event id into a Prefect event id.
EVENT_NAMESPACE = uuid.UUID("6f1c1d1e-8b0a-4e55-9d1e-d0cc4ecc0001")

CampaignLookup = Callable[[str], "str | None"]


def event_name(service_event_type: str) -> str:
    """``check.completed`` → ``doccheck.check.completed`` (anything else keeps its last word)."""
    return EVENT_PREFIX + service_event_type.rsplit(".", 1)[-1]


def prefect_event(event: Event, campaign: str | None = None, *, occurred: datetime | None = None) -> dict[str, Any]:
    """The Prefect event (JSON-ready dict) for one verified service event."""
    check = event.check
    status = event.type.rsplit(".", 1)[-1]
    resource: dict[str, str] = {
        "prefect.resource.id": f"doccheck.check.{check.id}",
        "doccheck.status": status,
    }
    if check.name:
        resource["prefect.resource.name"] = str(check.name)[:200]
    if event.product:  # the canonical product when the service profile knows the spelling (issue 39)
        resource["doccheck.product"] = current_profile().product_word(event.product) or str(event.product)
    related: list[dict[str, str]] = []
    if campaign:
        resource["doccheck.campaign"] = campaign
        related.append(
            {
                "prefect.resource.id": f"doccheck.campaign.{campaign}",
                "prefect.resource.role": "campaign",
                "prefect.resource.name": campaign,
            }
        )
    # Receipt time, not the service's ``created_at``: trigger windows are evaluated on
    # ``occurred``, and a service (or emulator) clock that runs ahead would skew them.
    when = occurred or datetime.now(UTC)
    return {
        "id": str(uuid.uuid5(EVENT_NAMESPACE, event.id)),
        "occurred": when.isoformat(),
        "event": event_name(event.type),
        "resource": resource,
        "related": related,
        "payload": {
            "service_event_id": event.id,
            "product": event.product,
            "check_status": check.status,
            "error_code": event.error.code if event.error is not None else None,
            "service_created_at": event.created_at.isoformat() if event.created_at else None,
        },
    }


class PrefectEventEmitter:
    """Posts events to ``{api_url}/events``; one pooled async HTTP client per receiver.

    ``campaign_of(check_id)`` (e.g. :func:`ledger_campaign_lookup`) adds the campaign, which
    is what the ``collect_results`` trigger passes on as the flow's parameter.
    """

    def __init__(
        self,
        api_url: str,
        api_key: SecretStr | None = None,
        *,
        campaign_of: CampaignLookup | None = None,
        timeout: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.events_url = api_url.rstrip("/") + "/events"
        self._api_key = api_key
        self._campaign_of = campaign_of
        self._timeout = timeout
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self.sent = 0
        self.failed = 0

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Content-Type": "application/json", **_auth_headers(self._api_key)}
            self._client = httpx.AsyncClient(headers=headers, timeout=self._timeout, transport=self._transport)
        return self._client

    async def emit(self, event: Event) -> bool:
        """Send the Prefect event of ``event``; True when the API accepted it. Never raises."""
        try:
            campaign = None
            if self._campaign_of is not None:
                from starlette.concurrency import run_in_threadpool

                campaign = await run_in_threadpool(self._campaign_of, event.check.id)
            body = [prefect_event(event, campaign)]
            response = await self._http().post(self.events_url, json=body)
            if response.status_code >= 300:
                self.failed += 1
                log.warning("Prefect refused event for %s: HTTP %s", event.id, response.status_code)
                return False
            self.sent += 1
            log.info("Prefect event %s for check %s (campaign %s)", body[0]["event"], event.check.id, campaign or "?")
            return True
        except Exception as exc:  # noqa: BLE001 - the UI trigger is a convenience; deliveries are safe in the ledger
            self.failed += 1
            log.warning("could not send the Prefect event for %s: %s", event.id, type(exc).__name__)
            return False

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def ledger_campaign_lookup(ledger: Any) -> CampaignLookup:
    """``check id → campaign`` from the ledger's submissions (None when unknown)."""
    from doccheck.ledger import campaign_of_check

    def lookup(check_id: str) -> str | None:
        with ledger.session() as s:
            return campaign_of_check(s, check_id)

    return lookup


def emitter_from_environment(
    api_url: str | None = None, *, campaign_of: CampaignLookup | None = None
) -> PrefectEventEmitter:
    """An emitter for ``api_url`` or ``PREFECT_API_URL``, with ``PREFECT_API_KEY`` when set (Cloud).

    Raises ``ValueError`` when no API address is known.
    """
    url, key = prefect_api_from_environment(api_url)
    return PrefectEventEmitter(url, key, campaign_of=campaign_of)


def _auth_headers(api_key: SecretStr | None) -> dict[str, str]:
    if api_key is not None and api_key.get_secret_value():
        return {"Authorization": f"Bearer {api_key.get_secret_value()}"}
    return {}


def read_secret_block(api_url: str, name: str, api_key: SecretStr | None = None, *, timeout: float = 10.0,
                      transport: httpx.BaseTransport | None = None) -> list[SecretStr]:  # fmt: skip
    """The value of the Prefect ``Secret`` block ``name`` (comma-separated → several secrets,
    for a rotation), read over the REST API:
    ``GET {api}/block_types/slug/secret/block_documents/name/{name}?include_secrets=true``;
    when there is no such Secret, the ``DocCheckWebhookSecret`` block of that name
    (``current``, and ``previous`` until its ``previous_valid_until``).

    Raises ``LookupError`` (no such block) or ``RuntimeError`` (API unreachable or refusing);
    messages name the block, never its value.
    """
    url = f"{api_url.rstrip('/')}/block_types/slug/secret/block_documents/name/{name}"
    try:
        with httpx.Client(timeout=timeout, headers=_auth_headers(api_key), transport=transport) as http:
            answer = http.get(url, params={"include_secrets": "true"})
    except httpx.HTTPError as exc:
        raise RuntimeError(
            f"cannot reach the Prefect API to read Secret block {name!r}: {type(exc).__name__}"
        ) from None
    if answer.status_code == 404:
        return _read_webhook_secret_block(api_url, name, api_key, timeout=timeout, transport=transport)
    if answer.status_code >= 300:
        raise RuntimeError(f"the Prefect API refused to read Secret block {name!r}: HTTP {answer.status_code}")
    value = (answer.json().get("data") or {}).get("value")
    if not isinstance(value, str):
        raise LookupError(f"the Prefect Secret block {name!r} holds no text value")
    return split_secrets(value)


def _read_webhook_secret_block(api_url: str, name: str, api_key: SecretStr | None, *, timeout: float,
                               transport: httpx.BaseTransport | None) -> list[SecretStr]:  # fmt: skip
    """The secrets a ``DocCheckWebhookSecret`` block named ``name`` accepts now (same REST
    read, its type's slug); the rotation rule is :func:`doccheck.domain.secrets_accepted_at`."""
    url = f"{api_url.rstrip('/')}/block_types/slug/doccheck-webhook-secret/block_documents/name/{name}"
    try:
        with httpx.Client(timeout=timeout, headers=_auth_headers(api_key), transport=transport) as http:
            answer = http.get(url, params={"include_secrets": "true"})
    except httpx.HTTPError as exc:
        raise RuntimeError(f"cannot reach the Prefect API to read block {name!r}: {type(exc).__name__}") from None
    if answer.status_code == 404:
        raise LookupError(f"no Prefect Secret or DocCheckWebhookSecret block named {name!r}")
    if answer.status_code >= 300:
        raise RuntimeError(f"the Prefect API refused to read block {name!r}: HTTP {answer.status_code}")
    data = answer.json().get("data") or {}
    current, previous, until = data.get("current"), data.get("previous"), data.get("previous_valid_until")
    if not isinstance(current, str) or not current.strip():
        raise LookupError(f"the DocCheckWebhookSecret block {name!r} holds no current secret")
    try:
        end = datetime.fromisoformat(until) if isinstance(until, str) else None
    except ValueError:
        raise LookupError(f"the DocCheckWebhookSecret block {name!r} has an unreadable previous_valid_until") from None
    accepted = secrets_accepted_at(current, previous if isinstance(previous, str) else None, end)
    return [SecretStr(s) for s in accepted]


def secret_block_provider(api_url: str, name: str, api_key: SecretStr | None = None, *,
                          ttl: float = 30.0) -> Callable[[], list[SecretStr]]:  # fmt: skip
    """A receiver secrets provider backed by a Secret block, re-read at most every ``ttl``
    seconds (a rotation stored in the block takes effect without a restart). When a re-read
    fails, the last good value is kept and the failure logged."""
    lock = threading.Lock()
    cache: dict[str, Any] = {"at": -1e18, "value": []}

    def provider() -> list[SecretStr]:
        with lock:
            if time.monotonic() - cache["at"] < ttl and cache["value"]:
                return list(cache["value"])
            try:
                cache["value"] = read_secret_block(api_url, name, api_key)
                cache["at"] = time.monotonic()
            except (LookupError, RuntimeError) as exc:
                if not cache["value"]:
                    raise
                log.warning("%s; keeping the secret read earlier", exc)
            return list(cache["value"])

    return provider


def prefect_api_from_environment(api_url: str | None = None) -> tuple[str, SecretStr | None]:
    """``api_url`` or ``PREFECT_API_URL``, and ``PREFECT_API_KEY`` (Prefect Cloud) when set."""
    url = (api_url or os.environ.get("PREFECT_API_URL", "")).strip()
    if not url:
        raise ValueError("no Prefect API address: set PREFECT_API_URL or pass --prefect-api-url")
    key = os.environ.get("PREFECT_API_KEY", "").strip()
    return url, (SecretStr(key) if key else None)
