"""``POST /checks``, ``GET /checks``, ``GET /checks/{id}`` and the report files."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from doccheck.emulator import _reports as reports
from doccheck.emulator._api_errors import ApiError, invalid_input, not_found
from doccheck.emulator._bearer_auth import authenticate, emulator_of
from doccheck.emulator._billing import price
from doccheck.emulator._documents import (
    Document,
    analyse,
    compare_similarity,
    from_file,
    from_text,
    from_upload,
    sha256,
    upload_of,
)
from doccheck.emulator._inputs import (
    MAX_ID_LENGTH,
    MAX_NAME_LENGTH,
    CheckInput,
    metadata_of,
    optional_str,
    products_fingerprint,
    products_of,
    read_check_input,
)
from doccheck.emulator._openapi_docs import CHECK_RESPONSES, CREATE_CHECK_BODY, LIST_PARAMS
from doccheck.emulator._processing import schedule_products
from doccheck.emulator._reference import reference_index
from doccheck.emulator._runtime import Emulator
from doccheck.emulator._service_limits import ascii_int
from doccheck.emulator._similarity import SourceInfo
from doccheck.emulator._store import FILE_KINDS, Account, Check, IdempotencyRecord
from doccheck.emulator._webhook_urls import vet_url_or_422

router = APIRouter()
MAX_IDEMPOTENCY_KEY = 255


def _fingerprint(account: Account, raw: CheckInput) -> str:
    """SHA-256 of the document bytes + sorted products (docs/contracts.md), computed
    before validation so that a replay naming an already consumed upload still matches."""
    if raw.file is not None:
        doc = "doc:" + sha256(raw.file.data)
    elif isinstance(raw.text, str):
        doc = "doc:" + sha256(raw.text.encode("utf-8", "surrogatepass"))
    elif isinstance(raw.upload_id, str):
        upload = account.uploads.get(raw.upload_id)
        doc = f"doc:{upload.sha256}" if upload is not None and upload.sha256 else f"upload:{raw.upload_id}"
    else:
        doc = "invalid:" + ",".join(sorted(raw.fields))
    return f"{doc}|{products_fingerprint(raw.products)}"


def _replay(account: Account, key: str | None, fingerprint: str, now: float, retention: float) -> Response | None:
    """The original check for a known key and fingerprint; 409 for another fingerprint."""
    if key is None:
        return None
    record = account.idempotency.get(key)
    if record is not None and now - record.created_at > retention:
        del account.idempotency[key]
        record = None
    if record is None:
        return None
    if record.fingerprint != fingerprint:
        raise ApiError(409, "idempotency_conflict",
                       "this Idempotency-Key was used with a different document or product set")  # fmt: skip
    original = account.checks[record.check_id]
    return JSONResponse(original.resource(), status_code=201, headers={"Idempotent-Replayed": "true"})


@router.post("/checks", status_code=201, openapi_extra=CREATE_CHECK_BODY, responses=CHECK_RESPONSES)
async def create_check(request: Request) -> Response:
    """Create a check from exactly one of text, file or upload_id."""
    emu = emulator_of(request)
    account = authenticate(request)
    key = request.headers.get("idempotency-key")
    if key is not None and not (0 < len(key) <= MAX_IDEMPOTENCY_KEY):
        raise invalid_input(f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} characters")
    raw = await read_check_input(request)
    retention = emu.config.idempotency_retention_s
    early = _replay(account, key, _fingerprint(account, raw), emu.clock.now(), retention)
    if early is not None:
        return early
    given = [f for f in ("text", "file", "upload_id") if f in raw.fields]
    if len(given) != 1:
        which = "none" if not given else " and ".join(given)
        raise invalid_input(f"exactly one of 'text', 'file' or 'upload_id' is required (got {which})")
    products = products_of(raw.products)
    name = optional_str(raw.name, "name", MAX_NAME_LENGTH)
    metadata = metadata_of(raw.metadata)
    webhook_url = await _webhook_url_of(emu, account, raw)
    check_id = str(uuid.uuid4())
    build = _builder(account, raw, given[0])

    def prepare() -> Document:
        doc = build()
        analyse(doc, products)
        return doc

    # Extraction and analysis can take seconds for big files: keep the server responsive.
    doc = await asyncio.to_thread(prepare)
    # Another request may have won a race while we were away: decide again, synchronously.
    now = emu.clock.now()
    late = _replay(account, key, _fingerprint_after(doc, products), now, retention)
    if late is not None:
        return late
    if doc.upload is not None:
        upload_of(account, doc.upload.id)
    if name is None:
        name = doc.filename if doc.upload or raw.file is not None else _timestamp_name(now)
    # numbered, compared and (below) indexed in one synchronous step: a check sees every one stored before it
    seq = emu.store.next_seq()
    compare_similarity(doc, products, [reference_index(), account.index], seq, check_id)
    check = Check(
        id=check_id, seq=seq, name=name, products=products, words=doc.words, created_at=now, metadata=metadata,
        cost=price(doc.words, products), original=doc.original, original_filename=doc.filename,
        original_content_type=doc.content_type, results=doc.results, webhook_url=webhook_url,
        ai={"status": "processing"} if "ai" in products else None,
        similarity={"status": "processing"} if "similarity" in products else None,
    )  # fmt: skip
    _charge_and_store(account, check, doc, key, _fingerprint_after(doc, products), now)
    schedule_products(emu, account, check)
    return JSONResponse(check.resource(), status_code=201)


async def _webhook_url_of(emu: Emulator, account: Account, raw: CheckInput) -> str | None:
    """The per-check webhook URL, vetted like the account's (409 while the account has none)."""
    webhook_url = optional_str(raw.webhook_url, "webhook_url", 4096)
    if webhook_url is None:
        return None
    if account.webhook is None:
        raise ApiError(409, "webhook_not_configured",
                       "set the account webhook (PUT /webhook) before giving a per-check webhook_url")  # fmt: skip
    return await vet_url_or_422(
        webhook_url, allow_private=emu.config.allow_private_webhooks, offline=emu.config.offline
    )


def _builder(account: Account, raw: CheckInput, given: str) -> Callable[[], Document]:
    """How the document is made from the one input given (run off the event loop)."""
    if given == "text":
        text = optional_str(raw.text, "text", 10**9)
        if not text or not text.strip():
            raise invalid_input("field 'text' is empty")
        return partial(from_text, text)
    if given == "file":
        assert raw.file is not None
        return partial(from_file, raw.file.data, raw.file.filename)
    upload_id = optional_str(raw.upload_id, "upload_id", MAX_ID_LENGTH) or ""
    upload = upload_of(account, upload_id)
    return partial(from_upload, upload, upload.data or b"")  # the bytes stored at this moment


def _charge_and_store(
    account: Account, check: Check, doc: Document, key: str | None, fingerprint: str, now: float
) -> None:
    """Bill the check (402 when the balance is short), store it, consume its upload, index it,
    and remember its Idempotency-Key: all synchronously, so no other request sees half of it."""
    total = check.cost["total_cents"]
    if total > account.balance_cents:
        raise ApiError(402, "insufficient_balance",
                       f"this check costs {total} cents; the balance is {account.balance_cents}")  # fmt: skip
    account.balance_cents -= total
    account.charged_cents += total
    account.checks[check.id] = check
    account.check_order.append(check.id)
    if doc.upload is not None:
        doc.upload.status = "consumed"
        doc.upload.check_id = check.id
        doc.upload.data = None
    account.index.add_hashes(SourceInfo(check.id, check.name, None, "submission", check.seq), doc.hashes)
    if key is not None:
        account.idempotency[key] = IdempotencyRecord(fingerprint, check.id, now)


def _fingerprint_after(doc: Document, products: list[str]) -> str:
    return f"doc:{sha256(doc.original)}|{','.join(sorted(products))}"


def _timestamp_name(ts: float) -> str:
    return "Text " + datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _check_of(account: Account, check_id: str) -> Check:
    check = account.checks.get(check_id)
    if check is None:
        raise not_found(f"no check with id {check_id[:64]!r}")
    return check


@router.get("/checks", openapi_extra=LIST_PARAMS)
async def list_checks(request: Request) -> Response:
    """The account's checks, newest first, paginated by ``starting_after``."""
    account = authenticate(request)
    raw_limit = request.query_params.get("limit", "10")
    limit = ascii_int(raw_limit, max_digits=3)
    if limit is None or not 1 <= limit <= 100:
        raise invalid_input("'limit' must be an integer from 1 to 100")
    ids = account.check_order[::-1]
    after = request.query_params.get("starting_after")
    if after:
        if after not in account.checks:
            raise not_found(f"'starting_after' names no check of this account: {after[:64]!r}")
        ids = ids[ids.index(after) + 1 :]
    page = ids[:limit]
    data = [account.checks[i].resource() for i in page]
    return JSONResponse({"object": "list", "data": data, "has_more": len(ids) > limit})


@router.get("/checks/{check_id}", responses=CHECK_RESPONSES)
async def get_check(request: Request, check_id: str) -> Response:
    """One check of the caller's account (404 for anyone else's)."""
    account = authenticate(request)
    return JSONResponse(_check_of(account, check_id).resource())


@router.get("/checks/{check_id}/files/{kind}")
async def get_file(request: Request, check_id: str, kind: str) -> Response:
    """The original bytes or a PDF report, once its ``files`` flag is true."""
    account = authenticate(request)
    check = _check_of(account, check_id)
    if kind not in FILE_KINDS:
        raise not_found(f"unknown file kind {kind[:40]!r}; use one of {', '.join(FILE_KINDS)}")
    if not check.files.get(kind):
        raise not_found(f"file {kind!r} is not available for this check (yet)")
    if kind == "original":
        return Response(
            check.original,
            media_type=check.original_content_type,
            headers={"Content-Disposition": f'attachment; filename="{_ascii(check.original_filename)}"'},
        )
    if kind not in check.rendered:
        render = reports.check_report if kind == "pdf" else reports.similarity_report
        check.rendered[kind] = render(check.resource())
    return Response(
        check.rendered[kind],
        media_type="application/pdf",
        headers={"Content-Disposition": f'attachment; filename="{check.id}-{kind}.pdf"'},
    )


def _ascii(name: str) -> str:
    return "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in name) or "original"
