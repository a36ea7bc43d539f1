"""Learn the service's profile with calls that cost nothing (``doccheck probe``).

Why: before pointing doccheck at a paying account, the user should know which of our
assumptions at the interface's "not shown" points the service keeps. Only free calls:

1. ``GET /webhook`` (the key works; 200 or 404);
2. ``GET /checks/{unknown id}`` (the error body's shape and status for an unknown id);
3. ``POST /checks`` with an invalid body (no input, an unknown product, no key): refused
   before any billing by every reading of the interface (the error shape of a refusal);
4. ``GET /checks?limit=N`` when a list exists (its presence, page limit, order, metadata,
   cursor) and ``GET /checks/{id}`` of a listed check (the retrieve path).

What needs a billed check (terminal words, price timing, score scales, replays) is reported
"untested"; the words and costs of checks already in the account are read where present.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
from pydantic import SecretStr

from doccheck.client import assumptions as A
from doccheck.client._config import http_options, resolve_config
from doccheck.client._http import LeanClient
from doccheck.client._profile import ServiceProfile, error_from_body

HOLDS, DIFFERS, UNTESTED = "holds", "differs", "untested"
PAGE_LIMITS = (100, 50, 20, 10)


@dataclass
class Finding:
    """One assumption: what we expect, what the service showed, and the verdict."""

    name: str
    expected: str
    observed: str
    verdict: str


@dataclass
class ProbeResult:
    """Every finding, and the profile that follows from them (defaults where untested)."""

    findings: list[Finding] = field(default_factory=list)
    profile: ServiceProfile = field(default_factory=ServiceProfile)

    def add(self, name: str, expected: object, observed: object, verdict: str | None = None) -> None:
        """Record one finding (``verdict`` from equality unless given)."""
        if verdict is None:
            verdict = HOLDS if expected == observed else DIFFERS
        self.findings.append(Finding(name, str(expected), str(observed), verdict))


def _error_shape(response: httpx.Response) -> str:
    """Which error body shape an answer has (ours, message, detail, problem, plain, none)."""
    ctype = response.headers.get("content-type", "")
    try:
        body = response.json()
    except ValueError:
        return "plain" if ctype.startswith("text/plain") and response.text.strip() else "none"
    if "problem+json" in ctype or (isinstance(body, dict) and "type" in body and "title" in body):
        return "problem"
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and "message" in inner:
            return "ours"
        if isinstance(inner, str):
            return "error-string"
        for key in ("message", "detail"):
            if key in body:
                return key
    return "other"


def probe(base_url: str | None, api_key: str | SecretStr | None, *, transport: Any = None) -> ProbeResult:
    """Run the free calls and return the findings and the learnt profile."""
    base, key = resolve_config(base_url, api_key)
    service, _ = http_options(base, key, timeout=15.0, transport=transport, upload_transport=None, max_connections=1)
    with LeanClient(**service) as http:  # no cookie kept, as in the clients
        return _probe(http)


def _probe(http: httpx.Client) -> ProbeResult:
    result = ProbeResult()
    learnt: dict[str, Any] = {}
    hook = http.get(A.WEBHOOK_PATH)
    if hook.status_code in (401, 403):
        raise PermissionError(f"the service refused the API key (HTTP {hook.status_code}): nothing probed")
    result.add("GET /webhook answers 200 or 404 (the start-up check)", "200|404", hook.status_code,
               HOLDS if hook.status_code in (200, 404) else DIFFERS)  # fmt: skip
    unknown = http.get(A.check_path(str(uuid.uuid4())))
    result.add("unknown check id: 404", 404, unknown.status_code)
    result.add("error body shape", "ours", _error_shape(unknown))
    code, message = error_from_body(_json(unknown), unknown.text, unknown.headers.get("content-type", ""))
    result.add("the service's own error message is read", "a message", message or "-",
               HOLDS if message else DIFFERS)  # fmt: skip
    refused = http.post(A.CHECKS_PATH, json={"products": ["doccheck-probe-invalid"]})
    result.add("invalid create refused 422 before billing", 422, refused.status_code,
               HOLDS if refused.status_code == 422 else (DIFFERS if refused.status_code >= 400 else "CHARGED?"))  # fmt: skip
    _probe_list(http, result, learnt)
    for name in ("terminal status words", "price known at creation", "AI score 0..1, similarity 0..100",
                 "a replayed key answers the original check", "Retry-After form", "key retention 24 h"):  # fmt: skip
        if not any(f.name == name for f in result.findings):
            result.add(name, "as the emulator", "needs a billed check", UNTESTED)
    result.profile = ServiceProfile(**learnt, probed={f.name: f.verdict for f in result.findings})
    return result


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _probe_list(http: httpx.Client, result: ProbeResult, learnt: dict[str, Any]) -> None:
    first = http.get(A.CHECKS_PATH, params={"limit": 1})
    if first.status_code == 404:
        learnt["list_checks"] = False
        result.add("GET /checks lists checks", "yes", "404: no list", DIFFERS)
        return
    result.add("GET /checks lists checks", "yes", f"HTTP {first.status_code}",
               HOLDS if first.status_code == 200 else DIFFERS)  # fmt: skip
    if first.status_code != 200:
        return
    for limit in PAGE_LIMITS:
        page = http.get(A.CHECKS_PATH, params={"limit": limit})
        if page.status_code == 200:
            learnt["list_max_page"] = limit
            break
    result.add("list page limit", 100, learnt.get("list_max_page", "none accepted"))
    items = (_json(page) or {}).get("data") or [] if page.status_code == 200 else []
    if not items:
        for name in ("listed checks carry metadata", "list newest first", "list honours starting_after",
                     "GET /checks/{id} retrieves a check"):  # fmt: skip
            result.add(name, "yes", "no check in the account to look at", UNTESTED)
        return
    with_meta = all(isinstance(c, dict) and "metadata" in c for c in items)
    learnt["list_metadata"] = with_meta
    result.add("listed checks carry metadata", "yes", "yes" if with_meta else "no")
    _probe_order(http, result, learnt, page)
    _probe_cursor(http, result, learnt, items)
    got = http.get(A.check_path(str(items[0]["id"])))
    learnt["get_by_id"] = got.status_code == 200
    result.add("GET /checks/{id} retrieves a check", 200, got.status_code)
    words = sorted({str(c.get("status")) for c in items if isinstance(c, dict)})
    known = ServiceProfile()
    odd = [w for w in words if w not in known.completed_words | known.failed_words | known.pending_words]
    result.add("status words in the account are known", "yes", ", ".join(odd) or "yes",
               DIFFERS if odd else HOLDS)  # fmt: skip


def _probe_order(http: httpx.Client, result: ProbeResult, learnt: dict[str, Any], page: httpx.Response) -> None:
    """The list's order from the times of its first two pages (free reads). A page of checks
    made within one second (an account's history, made by a script) shows no order: the
    next page is read, and the order is only claimed when a step of more than a second shows it."""
    times: list[datetime] = []
    body = _json(page) or {}
    for _ in range(2):
        items = [c for c in body.get("data") or [] if isinstance(c, dict)]
        times += [t for t in (_time(c.get("created_at")) for c in items) if t is not None]
        order = list_order_of(times)
        if order is not None or not body.get("has_more") or not items:
            break
        after = http.get(A.CHECKS_PATH, params={"limit": learnt.get("list_max_page", 100),
                                                "starting_after": items[-1].get("id")})  # fmt: skip
        body = (_json(after) or {}) if after.status_code == 200 else {}
    if order is None:
        result.add("list newest first", "yes", "no two listed checks a second apart", UNTESTED)
        return
    learnt["list_order"] = order
    said = {"newest_first": "yes", "oldest_first": "no (oldest first)", "unknown": "no (in no order)"}[order]
    result.add("list newest first", "yes", said, HOLDS if order == "newest_first" else DIFFERS)


def list_order_of(times: list[datetime]) -> str | None:
    """``newest_first``/``oldest_first`` when every step of more than a second goes one way,
    ``unknown`` when steps go both ways, None when no step shows (fewer than two, or equal)."""
    second = timedelta(seconds=1)
    down = any(a - b > second for a, b in zip(times, times[1:], strict=False))
    up = any(b - a > second for a, b in zip(times, times[1:], strict=False))
    if down and up:
        return "unknown"
    if down:
        return "newest_first"
    if up:
        return "oldest_first"
    return None


def _probe_cursor(http: httpx.Client, result: ProbeResult, learnt: dict[str, Any], items: list[Any]) -> None:
    if len(items) < 2:
        result.add("list honours starting_after", "yes", "fewer than two checks", UNTESTED)
        return
    after = http.get(A.CHECKS_PATH, params={"limit": 1, "starting_after": items[0]["id"]})
    data = (_json(after) or {}).get("data") or [] if after.status_code == 200 else []
    ok = bool(data) and data[0].get("id") == items[1]["id"]
    result.add("list honours starting_after", "yes", "yes" if ok else f"no (HTTP {after.status_code})")


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
