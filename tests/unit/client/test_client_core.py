"""Client request building, configuration and error mapping (httpx.MockTransport, no server)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import certifi
import httpx
import pytest

from doccheck.client import (
    AsyncDocCheckClient,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    DocCheckClient,
    DocCheckError,
    LocalValidationError,
    NotFoundError,
    PaymentRequiredError,
    PermissionDeniedError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    UploadExpiredError,
    ValidationError,
)
from doccheck.client._core import USER_AGENT
from tests.factories import BASE, CHECK, KEY, Recorder, created, err

NO_RETRY = RetryPolicy(max_attempts=1)


def client_for(rec: Recorder, retry: RetryPolicy = NO_RETRY) -> DocCheckClient:
    return DocCheckClient(BASE, KEY, retry=retry, transport=httpx.MockTransport(rec))


# --- configuration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["http://svc.test", "http://svc.test/api", "http://svc.test/api/v2", "svc.test/api/v1", "ftp://svc.test/api/v1"],
)
def test_base_url_must_end_in_api_v1(url: str) -> None:
    with pytest.raises(ConfigurationError, match="/api/v1"):
        DocCheckClient(url, KEY)


def test_base_url_trailing_slash_ok_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert DocCheckClient(BASE + "/", KEY).base_url == BASE
    monkeypatch.setenv("DOCCHECK_BASE_URL", BASE)
    monkeypatch.setenv("DOCCHECK_API_KEY", KEY)
    rec = Recorder(created())
    with DocCheckClient(transport=httpx.MockTransport(rec)) as client:
        client.create_check(text="hello there world")
    assert rec.requests[0].headers["Authorization"] == f"Bearer {KEY}"


def test_missing_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCCHECK_BASE_URL", raising=False)
    monkeypatch.delenv("DOCCHECK_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="DOCCHECK_BASE_URL"):
        DocCheckClient()
    with pytest.raises(ConfigurationError, match="DOCCHECK_API_KEY"):
        DocCheckClient(BASE)


def test_repr_never_shows_key() -> None:
    client = DocCheckClient(BASE, KEY)
    assert KEY not in repr(client) and KEY not in str(vars(client))


# --- request building ---------------------------------------------------------------------


def test_text_check_is_json_with_headers() -> None:
    rec = Recorder(created())
    check = client_for(rec).create_check(
        text="Some text", products=["ai", "similarity"], name="n", metadata={"row": 1}, idempotency_key="k1"
    )
    req = rec.requests[0]
    assert req.method == "POST" and str(req.url) == f"{BASE}/checks"
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert req.headers["Idempotency-Key"] == "k1"
    assert req.headers["User-Agent"] == USER_AGENT and USER_AGENT.startswith("doccheck/0.1.0 httpx/")
    assert req.headers["Content-Type"] == "application/json"
    assert json.loads(rec.bodies[0]) == {
        "text": "Some text",
        "products": ["ai", "similarity"],
        "name": "n",
        "metadata": {"row": 1},
    }
    assert check.id == CHECK["id"] and check.status == "processing" and not check.replayed


def test_no_idempotency_header_without_key_and_defaults_left_to_service() -> None:
    rec = Recorder(created())
    client_for(rec).create_check(upload_id="u1")
    assert "Idempotency-Key" not in rec.requests[0].headers
    assert json.loads(rec.bodies[0]) == {"upload_id": "u1"}


def test_replay_header_marks_check() -> None:
    rec = Recorder(created(**{"Idempotent-Replayed": "true"}))
    assert client_for(rec).create_check(text="x y", idempotency_key="k").replayed


def test_multipart_repeats_products_and_streams_file(tmp_path: Path) -> None:
    doc = tmp_path / "essay.md"
    doc.write_text("# Title\n\nbody words here\n")
    rec = Recorder(created())
    client_for(rec).create_check(file=doc, products=["ai", "similarity"], metadata={"a": 1}, webhook_url="https://h/x")
    req, body = rec.requests[0], rec.bodies[0]
    assert req.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    assert body.count(b'name="products"') == 2
    assert b'filename="essay.md"' in body and b"Content-Type: text/markdown" in body
    assert b"body words here" in body and b'{"a": 1}' in body and b"https://h/x" in body


def test_create_check_leaves_products_to_the_service() -> None:
    rec = Recorder(created())
    client_for(rec).create_check(text="x", products=["ai", "plagiarism", "ai"])
    assert json.loads(rec.bodies[0])["products"] == ["ai", "plagiarism"]


def test_submit_refuses_invalid_products_locally() -> None:
    from doccheck.client import TextDocument

    rec = Recorder(created())
    with pytest.raises(LocalValidationError, match="invalid products"):
        client_for(rec).submit(TextDocument("x"), products=["ai", "plagiarism"])
    with pytest.raises(LocalValidationError):
        client_for(rec).submit(TextDocument("x"), products=[])
    assert rec.requests == []


def test_paths_of_reads_and_webhook() -> None:
    hook = {"object": "webhook", "url": "https://r.example/h", "secret": "whsec_abc", "message": "store it"}
    rec = Recorder(
        httpx.Response(200, json=CHECK),
        httpx.Response(200, json={"object": "list", "data": [CHECK], "has_more": False}),
        httpx.Response(200, content=b"%PDF-1.4"),
        httpx.Response(200, json=hook),
        httpx.Response(
            200,
            json={
                "object": "webhook",
                "url": "https://r.example/h",
                "last_delivery": {"status": "succeeded", "http_status": 200, "at": None},
            },
        ),
        httpx.Response(200, json=dict(hook, secret="whsec_new")),
        httpx.Response(204),
    )
    c = client_for(rec)
    assert c.get_check("abc").id == CHECK["id"]
    assert len(c.list_checks(limit=5, starting_after="zzz").data) == 1
    assert c.get_file("abc", "pdf") == b"%PDF-1.4"
    created_hook = c.put_webhook("https://r.example/h")
    got = c.get_webhook()
    rotated = c.rotate_webhook()
    c.delete_webhook()
    assert [(r.method, r.url.path, r.url.query.decode()) for r in rec.requests] == [
        ("GET", "/api/v1/checks/abc", ""),
        ("GET", "/api/v1/checks", "limit=5&starting_after=zzz"),
        ("GET", "/api/v1/checks/abc/files/pdf", ""),
        ("PUT", "/api/v1/webhook", ""),
        ("GET", "/api/v1/webhook", ""),
        ("POST", "/api/v1/webhook/rotate", ""),
        ("DELETE", "/api/v1/webhook", ""),
    ]
    assert json.loads(rec.bodies[3]) == {"url": "https://r.example/h"}
    assert created_hook.secret is not None and created_hook.secret.get_secret_value() == "whsec_abc"
    assert "whsec_abc" not in repr(created_hook)
    assert got.secret is None and got.last_delivery is not None and got.last_delivery.http_status == 200
    assert rotated.secret is not None and rotated.secret.get_secret_value() == "whsec_new"


@pytest.mark.parametrize("bad", ["", "../x", "a/b", "a?b", "a#b", ".."])
def test_ids_cannot_change_the_path(bad: str) -> None:
    rec = Recorder(httpx.Response(200, json=CHECK))
    with pytest.raises(LocalValidationError):
        client_for(rec).get_check(bad)
    assert rec.requests == []


def test_unknown_file_kind_refused_locally() -> None:
    rec = Recorder(httpx.Response(200))
    with pytest.raises(LocalValidationError, match="file kind"):
        client_for(rec).get_file("abc", "docx")
    assert rec.requests == []


def test_iter_checks_pages() -> None:
    c1, c2, c3 = (dict(CHECK, id=f"id{i}") for i in range(3))
    rec = Recorder(
        httpx.Response(200, json={"object": "list", "data": [c1, c2], "has_more": True}),
        httpx.Response(200, json={"object": "list", "data": [c3], "has_more": False}),
    )
    assert [c.id for c in client_for(rec).iter_checks(page_size=2)] == ["id0", "id1", "id2"]
    assert rec.requests[1].url.params["starting_after"] == "id1"


def test_storage_put_has_no_authorization_and_exact_content_type(tmp_path: Path) -> None:
    from doccheck.client import Upload

    doc = tmp_path / "big.txt"
    doc.write_bytes(b"word " * 50_000)
    up = Upload(
        upload_id="u", upload_url="http://storage.test/put/u?sig=abc&exp=1", content_type="text/plain; charset=utf-8"
    )
    api, storage = Recorder(httpx.Response(500)), Recorder(httpx.Response(200))
    client = DocCheckClient(
        BASE, KEY, retry=NO_RETRY, transport=httpx.MockTransport(api), upload_transport=httpx.MockTransport(storage)
    )
    client.put_upload(up, doc)
    req = storage.requests[0]
    assert api.requests == []
    assert req.method == "PUT" and str(req.url) == up.upload_url
    assert "Authorization" not in req.headers
    assert req.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert req.headers["Content-Length"] == str(doc.stat().st_size)
    assert storage.bodies[0] == doc.read_bytes()


# --- error mapping -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (401, "unauthorized", AuthenticationError),
        (422, "invalid_input", ValidationError),
        (422, "invalid_products", ValidationError),
        (415, "unsupported_file_type", ValidationError),
        (413, "file_too_large", ValidationError),
        (404, "upload_not_found", NotFoundError),
        (404, "not_found", NotFoundError),
        (409, "upload_consumed", ConflictError),
        (409, "upload_incomplete", ConflictError),
        (409, "too_many_uploads", ConflictError),
        (409, "webhook_not_configured", ConflictError),
        (409, "idempotency_conflict", ConflictError),
        (422, "invalid_webhook_url", ValidationError),
        (402, "insufficient_balance", PaymentRequiredError),
        (403, "upload_url_expired", UploadExpiredError),
        (403, "forbidden", PermissionDeniedError),
        (429, "rate_limited", RateLimitError),
        (500, "internal", ServerError),
        (503, "unavailable", ServerError),
        (418, "teapot", DocCheckError),
    ],
)
def test_error_mapping(status: int, code: str, cls: type[DocCheckError]) -> None:
    rec = Recorder(err(status, code, "it failed", **{"X-Request-Id": "req_42", "Retry-After": "3"}))
    with pytest.raises(cls) as info:
        client_for(rec).get_check("abc")
    e = info.value
    assert type(e) is cls
    assert (e.status_code, e.code, e.message, e.request_id) == (status, code, "it failed", "req_42")
    assert "req_42" in str(e) and code in str(e)
    if cls is RateLimitError:
        assert e.retry_after == 3.0


def test_non_envelope_error_body_still_typed() -> None:
    rec = Recorder(httpx.Response(502, content=b"<html>Bad gateway</html>"))
    with pytest.raises(ServerError) as info:
        client_for(rec).get_check("abc")
    assert info.value.code == "http_502" and info.value.message == "Bad Gateway"


def test_api_key_never_in_error_message() -> None:
    rec = Recorder(err(401, "unauthorized", f"key {KEY} is unknown"))
    with pytest.raises(AuthenticationError) as info:
        client_for(rec).get_check("abc")
    assert KEY not in str(info.value) and KEY not in repr(info.value)


def test_invalid_json_success_body_is_typed_error() -> None:
    rec = Recorder(httpx.Response(200, content=b"oops"))
    with pytest.raises(DocCheckError, match="not JSON"):
        client_for(rec).get_check("abc")


# --- async twin ----------------------------------------------------------------------------


def test_async_client_same_requests(tmp_path: Path) -> None:
    doc = tmp_path / "a.txt"
    doc.write_text("one two three")
    rec = Recorder(created(), httpx.Response(200, json=CHECK))

    async def main() -> None:
        async with AsyncDocCheckClient(BASE, KEY, retry=NO_RETRY, transport=httpx.MockTransport(rec)) as c:
            check = await c.create_check(file=doc, products=["ai", "similarity"], idempotency_key="k")
            assert check.id == CHECK["id"]
            assert (await c.get_check(check.id)).status == "processing"
            with pytest.raises(LocalValidationError):
                await c.get_file("x", "bogus")

    asyncio.run(main())
    assert rec.requests[0].headers["Idempotency-Key"] == "k"
    assert rec.bodies[0].count(b'name="products"') == 2
    assert rec.requests[1].url.path.endswith("/checks/" + CHECK["id"])


def test_errors_pickle_round_trip() -> None:
    import pickle

    from doccheck.client import EmptyDocument, NetworkError

    for e in (
        RateLimitError("slow down", status_code=429, code="rate_limited", request_id="r1", retry_after=2.0),
        NetworkError("down", connect=True, code="network_error"),
        UploadExpiredError("late", status_code=403, code="upload_url_expired"),
        EmptyDocument("text is empty", code="invalid_input"),
    ):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and vars(back) == vars(e)


def test_clients_share_one_tls_context_per_certificate_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the CA bundle costs ~20 ms: every client of a process uses the same context,
    and a different ``SSL_CERT_FILE`` gets its own."""
    from doccheck.client._config import tls_context

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first = tls_context()
    assert tls_context() is first
    bundle = Path(certifi.where())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    other = tls_context()
    assert other is not first and tls_context() is other
