"""Variant profiles: the emulator answering as another, equally valid reading of the interface.

Why: where the interface says "not shown" the emulator made one choice (DESIGN.md); the real
service may have made another. ``doccheck emulator --profile NAME`` (or, per account, the
control surface's ``POST /_emulator/profile``) makes the emulator answer as that variant, so
users rehearse against it and tests prove that doccheck neither bills twice nor misreports.

How: an ASGI middleware in front of the API, like a reverse proxy: the routes stay the
emulator's own, and each variant rewrites a request or an answer (an error body's shape, a
status word, a score's scale, a list's order...). Billing is untouched: the emulator still
charges at creation and refunds failed products, whatever the variant shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

from doccheck.emulator._senders import SENDERS

API = "/api/v1"
#: Checks of the account's older history listed first by ``list-history-oldest-first``: more
#: than a page of 100, so the first page of a walk is history alone.
HISTORY = 120
#: The profiles and what each changes (``doccheck emulator --help`` lists them).
VARIANTS: dict[str, str] = {
    "default": "the emulator's own choices (DESIGN.md)",
    "message-errors": 'error bodies {"message", "code"}',
    "detail-errors": 'error bodies {"detail": "..."}',
    "problem-errors": "RFC 9457 problem+json errors; Retry-After as an HTTP date",
    "plain-errors": "text/plain error bodies",
    "created-202": "POST /checks answers 202",
    "no-replay-header": "no Idempotent-Replayed header on a replay",
    "queued": "status 'queued' until a product finishes",
    "status-synonyms": "'succeeded' and 'errored' instead of 'completed' and 'failed'",
    "string-error": "'error' as a bare string",
    "ai-percent": "AI scores on 0..100",
    "similarity-fraction": "similarity scores on 0..1",
    "price-at-completion": "cost 0 until the check is finished",
    "reuse-refused": "a replayed Idempotency-Key is refused 409 (the check exists and was charged)",
    "lost-answers": "every 3rd new check is answered 502 after it was made and charged",
    "reuse-refused-lost": "lost-answers and reuse-refused together (a retry of a lost answer gets 409)",
    "list-no-metadata": "listed checks carry no metadata",
    "list-oldest-first": "GET /checks lists oldest first",
    "list-ignores-cursor": "GET /checks ignores starting_after",
    "list-small-page": "GET /checks accepts limit up to 20",
    "no-list": "no GET /checks (404)",
    "no-get-by-id": "no GET /checks/{id} (404)",
    "list-history-oldest-first": "GET /checks oldest first, opening on the account's older history "
    f"({HISTORY} checks other tools made in one second, two days before)",
    "no-odt": "takes no .odt/.ott files: a create or an upload naming one is refused 415 unsupported_file_type",
    **SENDERS,  # webhook senders (doccheck.emulator._senders): the API answers as the default
}
#: File types a profile does not take (as a service with a shorter list than the emulator's).
REFUSED_TYPES: dict[str, tuple[str, ...]] = {"no-odt": (".odt", ".ott")}
#: The most of a request body read to find its file name (a multipart create is at most ~4 MB).
_SNIFF_LIMIT = 5 * 1024 * 1024
SMALL_PAGE = 20
_CHECK_PATH = re.compile(rf"^{API}/checks/[^/]+$")
Message = dict[str, Any]


class VariantState:
    """The profile in force: one for the emulator, and one per account (tests share an emulator)."""

    def __init__(self, default: str = "default") -> None:
        self.default = check_name(default)
        self.by_account: dict[str, str] = {}
        #: New checks made under a lost-answers profile (every 3rd answer is lost).
        self.creates = 0
        #: Creates and uploads refused as an unsupported type, by account (what a test counts).
        self.refused: dict[str, int] = {}

    def for_key(self, api_key: str) -> str:
        """The profile of an account (the webhook senders ask by key, not by request)."""
        return self.by_account.get(api_key, self.default)

    def for_scope(self, scope: Message) -> str:
        key = _api_key(scope)
        return self.by_account.get(key, self.default) if key is not None else self.default


def _api_key(scope: Message) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            return str(value.decode("latin-1").removeprefix("Bearer ").strip())
    return None


def check_name(name: str) -> str:
    """``name`` when it is a known profile; ValueError naming the known ones otherwise."""
    if name not in VARIANTS:
        raise ValueError(f"unknown emulator profile {name!r}: one of {', '.join(VARIANTS)}")
    return name


class VariantEdge:
    """Pure ASGI middleware applying the request's profile (``default``: a pass-through)."""

    def __init__(self, app: Any, state: VariantState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(API):
            await self.app(scope, receive, send)
            return
        name = self.state.for_scope(scope)
        if name == "default" or name in SENDERS:
            await self.app(scope, receive, send)
            return
        if name in REFUSED_TYPES and scope.get("method") == "POST" and path in (f"{API}/checks", f"{API}/uploads"):
            body, receive = await _buffered(receive)
            refused = _refused_type(body, REFUSED_TYPES[name])
            if refused is not None:
                key = _api_key(scope) or ""
                self.state.refused[key] = self.state.refused.get(key, 0) + 1
                await _send_answer(send, *_error(415, "unsupported_file_type", f"unsupported file type {refused!r}"))
                return
        status, headers, body = await self._answer(name, scope, receive)
        if self._loses(name, scope, status, headers):
            status, headers, body = _error(502, "bad_gateway", "the answer was lost on the way back")
        status, headers, body = _rewrite(name, scope, status, headers, body)
        await _send_answer(send, status, headers, body)

    def _loses(self, name: str, scope: Message, status: int, headers: list[Any]) -> bool:
        """Whether this answer to a new check is lost (the check exists and was charged)."""
        if name not in ("lost-answers", "reuse-refused-lost") or status != 201:
            return False
        if scope.get("method") != "POST" or scope.get("path") != f"{API}/checks":
            return False
        if _header(headers, b"idempotent-replayed") == b"true":
            return False
        self.state.creates += 1
        return self.state.creates % 3 == 0

    async def _answer(self, name: str, scope: Message, receive: Any) -> tuple[int, list[Any], bytes]:
        method, path = scope.get("method"), scope.get("path", "")
        listing = method == "GET" and path == f"{API}/checks"
        if (name == "no-list" and listing) or (name == "no-get-by-id" and method == "GET" and _CHECK_PATH.match(path)):
            return _error(404, "not_found", "no such endpoint")
        if name == "list-history-oldest-first" and method == "GET" and _CHECK_PATH.match(path):
            found = await _other_tools_check(self, scope, path)
            if found is not None:
                return found
        if listing:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            limit = query.get("limit", "10")
            if name == "list-small-page" and limit.isdigit() and int(limit) > SMALL_PAGE:
                return _error(400, "invalid_input", f"'limit' must be at most {SMALL_PAGE}")
            if name == "list-ignores-cursor":
                query.pop("starting_after", None)
                scope = {**scope, "query_string": urlencode(query).encode()}
            if name in ("list-oldest-first", "list-history-oldest-first"):
                return await self._oldest_first(scope, query, history=HISTORY if "history" in name else 0)
        return await _call(self.app, scope, receive)

    async def _whole_list(self, scope: Message, history: int) -> tuple[int, list[Any], Any]:
        """Every listed check, oldest first, after ``history`` checks of other tools."""
        items: list[Any] = []
        after: str | None = None
        for _ in range(1000):
            q = {"limit": "100", **({"starting_after": after} if after else {})}
            status, headers, body = await _call(self.app, {**scope, "query_string": urlencode(q).encode()}, _empty)
            if status != 200:
                return status, headers, json.loads(body or b"null")
            page = json.loads(body)
            items += page["data"]
            if not page["has_more"] or not page["data"]:
                break
            after = page["data"][-1]["id"]
        items.reverse()
        return 200, [], older_history(items, history) + items

    async def _oldest_first(
        self, scope: Message, query: dict[str, str], *, history: int = 0
    ) -> tuple[int, list[Any], bytes]:
        """The whole list read from the emulator (newest first), served oldest first, after
        ``history`` checks other tools made in one second two days before the first one."""
        status, headers, items = await self._whole_list(scope, history)
        if status != 200:
            return status, headers, json.dumps(items).encode()
        ids = [c["id"] for c in items]
        start = ids.index(query["starting_after"]) + 1 if query.get("starting_after") in ids else 0
        limit = int(query["limit"]) if query.get("limit", "").isdigit() else 10
        page_items = items[start : start + limit]
        out = {"object": "list", "data": page_items, "has_more": start + limit < len(items)}
        return 200, [(b"content-type", b"application/json")], json.dumps(out).encode()


async def _other_tools_check(edge: VariantEdge, scope: Message, path: str) -> tuple[int, list[Any], bytes] | None:
    """``GET /checks/chk_other_…`` of ``list-history-oldest-first``: the listed history check."""
    check_id = path.rsplit("/", 1)[-1]
    if not check_id.startswith("chk_other_"):
        return None
    status, headers, items = await edge._whole_list({**scope, "path": f"{API}/checks"}, HISTORY)
    found = next((c for c in items if c.get("id") == check_id), None) if status == 200 else None
    if found is None:
        return None
    return 200, [(b"content-type", b"application/json")], json.dumps(found).encode()


def older_history(items: list[Any], count: int) -> list[Any]:
    """``count`` checks made by other tools (no doccheck metadata), in one second, two days
    before the oldest of ``items`` (or before now): what an account's list opens with."""
    if count <= 0:
        return []
    times = [datetime.fromisoformat(str(c["created_at"]).replace("Z", "+00:00")) for c in items if c.get("created_at")]
    at = (min(times) if times else datetime.now(UTC)) - timedelta(days=2)
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return [
        {"id": f"chk_other_{i:04d}", "object": "check", "status": "completed", "name": f"other tool {i}",
         "products": ["ai"], "created_at": stamp, "completed_at": stamp, "metadata": {"source": "other-tool"},
         "cost": {"ai_cents": 1, "similarity_cents": 0, "total_cents": 1, "billed_words": 100}, "error": None,
         "ai": {"status": "completed"}, "similarity": None}
        for i in range(count)
    ]  # fmt: skip


async def _send_answer(send: Any, status: int, headers: list[Any], body: bytes) -> None:
    headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _buffered(receive: Any) -> tuple[bytes, Any]:
    """The request body read (up to :data:`_SNIFF_LIMIT`), and a ``receive`` serving it again."""
    messages: list[Message] = []
    seen = 0
    while True:
        message = await receive()
        messages.append(message)
        seen += len(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body") or seen > _SNIFF_LIMIT:
            break
    body = b"".join(m.get("body", b"") for m in messages)

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return body, replay


_FILENAME = re.compile(rb'filename="([^"\r\n]{0,300})"|"filename"\s*:\s*"([^"]{0,300})"')


def _refused_type(body: bytes, refused: tuple[str, ...]) -> str | None:
    """The refused extension a create's file part or an upload's ``filename`` names, if any."""
    for match in _FILENAME.finditer(body):
        name = (match.group(1) or match.group(2) or b"").decode("latin-1").strip().lower()
        ext = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        if ext in refused:
            return ext
    return None


async def _empty() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _call(app: Any, scope: Message, receive: Any) -> tuple[int, list[Any], bytes]:
    start: Message = {}
    chunks: list[bytes] = []

    async def capture(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, capture)
    return int(start.get("status", 500)), list(start.get("headers", [])), b"".join(chunks)


def _error(status: int, code: str, message: str) -> tuple[int, list[Any], bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, [(b"content-type", b"application/json")], body


def _header(headers: list[Any], name: bytes) -> bytes | None:
    return next((v for k, v in headers if k.lower() == name), None)


def _rewrite(name: str, scope: Message, status: int, headers: list[Any], body: bytes) -> tuple[int, list[Any], bytes]:
    ctype = (_header(headers, b"content-type") or b"").decode("latin-1")
    if "json" not in ctype:
        return status, headers, body
    data = json.loads(body or b"null")
    replayed = _header(headers, b"idempotent-replayed") == b"true"
    if name == "no-replay-header":
        headers = [(k, v) for k, v in headers if k.lower() != b"idempotent-replayed"]
    if name in ("reuse-refused", "reuse-refused-lost") and replayed:
        status, data = 409, {"error": {"code": "idempotency_key_reused", "message": "this Idempotency-Key was used"}}
        headers = [(k, v) for k, v in headers if k.lower() != b"idempotent-replayed"]
    if name == "created-202" and status == 201 and scope.get("method") == "POST" and scope["path"] == f"{API}/checks":
        status = 202
    if status >= 400 and isinstance(data, dict) and isinstance(data.get("error"), dict):
        return _error_shape(name, status, headers, data["error"])
    rewrite = _CHECK_REWRITES.get(name)
    if isinstance(data, dict) and data.get("object") == "list":
        if name == "list-no-metadata":
            data["data"] = [_no_metadata(c) for c in data.get("data", [])]
        if rewrite is not None:
            data["data"] = [rewrite(c) for c in data.get("data", [])]
    elif rewrite is not None and isinstance(data, dict) and data.get("object") == "check":
        data = rewrite(data)
    return status, headers, json.dumps(data).encode()


def _error_shape(name: str, status: int, headers: list[Any], inner: Message) -> tuple[int, list[Any], bytes]:
    code, message = inner.get("code"), inner.get("message")
    others = [(k, v) for k, v in headers if k.lower() not in (b"content-type", b"retry-after")]
    retry_after = _header(headers, b"retry-after")
    if name == "message-errors":
        out: Any = {"message": message, "code": code}
    elif name == "detail-errors":
        out = {"detail": message}
    elif name == "problem-errors":
        out = {"type": f"https://errors.example/{code}", "title": code, "status": status, "detail": message}
        if retry_after is not None:
            when = datetime.now(UTC) + timedelta(seconds=float(retry_after))
            retry_after = format_datetime(when.replace(microsecond=0), usegmt=True).encode()
        ctype = b"application/problem+json"
        return status, [*others, (b"content-type", ctype), *_retry(retry_after)], json.dumps(out).encode()
    elif name == "plain-errors":
        return status, [*others, (b"content-type", b"text/plain"), *_retry(retry_after)], str(message).encode()
    elif name == "string-error":
        out = {"error": message}
    else:
        out = {"error": inner}
    return status, [*others, (b"content-type", b"application/json"), *_retry(retry_after)], json.dumps(out).encode()


def _retry(value: bytes | None) -> list[tuple[bytes, bytes]]:
    return [(b"retry-after", value)] if value is not None else []


def _products(check: Message, fn: Callable[[Message], None]) -> Message:
    for product in ("ai", "similarity"):
        if isinstance(check.get(product), dict):
            fn(check[product])
    return check


def _synonyms(check: Message) -> Message:
    words = {"completed": "succeeded", "failed": "errored"}

    def one(obj: Message) -> None:
        status = str(obj.get("status"))
        obj["status"] = words.get(status, status)

    one(check)
    return _products(check, one)


def _queued(check: Message) -> Message:
    def one(obj: Message) -> None:
        if obj.get("status") == "processing":
            obj["status"] = "queued"

    one(check)
    return _products(check, one)


def _string_error(check: Message) -> Message:
    def one(obj: Message) -> None:
        if isinstance(obj.get("error"), dict):
            obj["error"] = obj["error"].get("message") or obj["error"].get("code")

    one(check)
    return _products(check, one)


def _scale(product: str, factor: float) -> Callable[[Message], Message]:
    def rewrite(check: Message) -> Message:
        result = check.get(product)
        if isinstance(result, dict) and isinstance(result.get("score"), (int, float)):
            result["score"] = round(result["score"] * factor, 4)
        return check

    return rewrite


def _price_at_completion(check: Message) -> Message:
    if check.get("status") == "processing" and isinstance(check.get("cost"), dict):
        check["cost"] = dict.fromkeys(check["cost"], 0)
    return check


def _no_metadata(check: Message) -> Message:
    check.pop("metadata", None)
    return check


_CHECK_REWRITES: dict[str, Callable[[Message], Message]] = {
    "status-synonyms": _synonyms,
    "queued": _queued,
    "string-error": _string_error,
    "ai-percent": _scale("ai", 100.0),
    "similarity-fraction": _scale("similarity", 0.01),
    "price-at-completion": _price_at_completion,
}
