"""Every endpoint and every DESIGN.md error code, through the client, against the real emulator."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from doccheck.client import (
    AsyncDocCheckClient,
    AuthenticationError,
    ConflictError,
    DocCheckClient,
    FileDocument,
    NotFoundError,
    PaymentRequiredError,
    RateLimitError,
    TextDocument,
    ValidationError,
)
from tests.factories import NO_RETRY, TEXT
from tests.factories import assert_client_error as assert_error

pytestmark = pytest.mark.integration

HOOK = "http://127.0.0.1:9/hook"  # loopback: accepted with --allow-private-webhooks; nobody listens


@pytest.fixture
def client(emulator, emulator_account: str) -> Iterator[DocCheckClient]:
    with DocCheckClient(emulator.base_url, emulator_account, retry=NO_RETRY, timeout=30) as c:
        yield c


def write_over_4mb(path: Path) -> Path:
    """Just over 4 MiB, so submit takes the upload flow. Mostly long tokens: few words, so the
    emulator's word counting stays fast (the bytes, not the words, are what is under test)."""
    with path.open("w") as fh:
        fh.write(TEXT + "\n")
        token_line = " ".join(["z" * 4000] * 16) + "\n"
        while fh.tell() <= 4 * 1024 * 1024 + 1000:
            fh.write(token_line)
    return path


# --- checks --------------------------------------------------------------------------------


def test_default_products_and_name(client: DocCheckClient) -> None:
    check = client.create_check(text=TEXT)
    assert check.products == ["ai"] and check.similarity is None and check.name


def test_list_and_iter_checks_newest_first(client: DocCheckClient) -> None:
    ids = [client.create_check(text=f"{TEXT} number {i}").id for i in range(5)]
    page = client.list_checks(limit=2)
    assert [c.id for c in page.data] == ids[::-1][:2] and page.has_more
    assert [c.id for c in client.iter_checks(page_size=2)] == ids[::-1]


def test_multipart_file_check(tmp_path: Path, client: DocCheckClient) -> None:
    doc = tmp_path / "essay.md"
    doc.write_text("# Essay\n\n" + TEXT)
    check = client.create_check(file=doc, products=["ai", "similarity"], metadata={"k": "v"})
    assert check.products == ["ai", "similarity"] and check.name == "essay.md" and check.metadata == {"k": "v"}


def test_submit_all_modes_and_replay(emulator, emulator_account: str, tmp_path: Path, client: DocCheckClient) -> None:
    small = tmp_path / "small.txt"
    small.write_text(TEXT)
    big = write_over_4mb(tmp_path / "big.txt")
    subs = [
        client.submit(TextDocument(TEXT), products=["ai"], idempotency_key=f"t-{uuid.uuid4()}"),
        client.submit(FileDocument(small), products=["similarity"], idempotency_key=f"m-{uuid.uuid4()}"),
        client.submit(FileDocument(big), products=["ai", "similarity"], idempotency_key=(key := f"u-{uuid.uuid4()}")),
    ]
    assert [s.mode for s in subs] == ["text", "multipart", "upload"]
    assert subs[2].upload_id and not any(s.replayed for s in subs)
    charged = emulator.account_state(emulator_account)["charged_cents"]
    # a rerun of the big one (new upload of the same bytes, same key) is a free replay
    again = client.submit(FileDocument(big), products=["ai", "similarity"], idempotency_key=key)
    assert again.replayed and again.check.id == subs[2].check.id
    assert emulator.account_state(emulator_account)["charged_cents"] == charged


def test_upload_endpoints_step_by_step(tmp_path: Path, client: DocCheckClient) -> None:
    doc = tmp_path / "report.txt"
    doc.write_text(TEXT)
    upload = client.create_upload("report.txt", size_bytes=doc.stat().st_size)
    assert upload.expires_in == 600 and upload.content_type.startswith("text/plain") and upload.instructions
    client.put_upload(upload, doc)
    check = client.create_check(upload_id=upload.upload_id)
    assert check.name == "report.txt" and check.words


def test_async_client_endpoints(emulator, emulator_account: str) -> None:
    async def main() -> None:
        async with AsyncDocCheckClient(emulator.base_url, emulator_account, retry=NO_RETRY) as c:
            created = await asyncio.gather(
                *(c.create_check(text=f"{TEXT} {i}", idempotency_key=f"a{i}") for i in range(5))
            )
            assert len({x.id for x in created}) == 5
            got = await c.get_check(created[0].id)
            assert got.id == created[0].id
            ids = [x.id async for x in c.iter_checks(page_size=2)]
            assert sorted(ids) == sorted(x.id for x in created)

    asyncio.run(main())


# --- webhook endpoint ------------------------------------------------------------------------


def test_webhook_endpoints(client: DocCheckClient) -> None:
    with pytest.raises(NotFoundError):
        client.get_webhook()
    created = client.put_webhook(HOOK)
    assert created.url == HOOK and created.secret is not None and created.secret.get_secret_value()
    got = client.get_webhook()
    assert got.url == HOOK and got.secret is None
    moved = client.put_webhook(HOOK + "2")
    assert moved.url == HOOK + "2" and moved.secret is None  # secret only on creation
    rotated = client.rotate_webhook()
    assert rotated.secret is not None and rotated.secret.get_secret_value() != created.secret.get_secret_value()
    client.delete_webhook()
    with pytest.raises(NotFoundError):
        client.get_webhook()


def test_check_with_webhook_url_after_account_webhook(client: DocCheckClient) -> None:
    client.put_webhook(HOOK)
    check = client.create_check(text=TEXT, webhook_url="http://127.0.0.1:9/other")
    assert check.status == "processing"


# --- every error code of DESIGN.md -------------------------------------------------------------


def test_unauthorized(emulator) -> None:
    with (
        DocCheckClient(emulator.base_url, "sk_test_not_a_key", retry=NO_RETRY) as c,
        pytest.raises(AuthenticationError) as exc,
    ):
        c.list_checks()
    assert_error(exc, 401, "unauthorized")
    assert "sk_test_not_a_key" not in str(exc.value)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"text": ""}, {"text": "   "}, {"text": TEXT, "upload_id": str(uuid.uuid4())}],
    ids=["none", "empty", "blank", "several"],
)
def test_invalid_input(client: DocCheckClient, kwargs: dict) -> None:
    with pytest.raises(ValidationError) as exc:
        client.create_check(**kwargs)
    assert_error(exc, 422, "invalid_input")


def test_invalid_products(client: DocCheckClient) -> None:
    with pytest.raises(ValidationError) as exc:
        client.create_check(text=TEXT, products=["ai", "plagiarism"])
    assert_error(exc, 422, "invalid_products")


def test_unsupported_file_type(tmp_path: Path, client: DocCheckClient) -> None:
    exe = tmp_path / "tool.exe"
    exe.write_bytes(b"MZ\x90\x00" * 10)
    with pytest.raises(ValidationError) as exc:
        client.create_check(file=exe)
    assert_error(exc, 415, "unsupported_file_type")
    with pytest.raises(ValidationError) as exc:
        client.create_upload("tool.exe", size_bytes=40)
    assert_error(exc, 415, "unsupported_file_type")


def test_file_too_large(tmp_path: Path, client: DocCheckClient) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"word " * (4 * 1024 * 1024 // 5 + 10))  # just over 4 MB
    with pytest.raises(ValidationError) as exc:
        client.create_check(file=big)
    assert_error(exc, 413, "file_too_large")
    with pytest.raises(ValidationError) as exc:
        client.create_upload("huge.pdf", size_bytes=50 * 1024 * 1024 + 1)
    assert_error(exc, 413, "file_too_large")
    declared = client.create_upload("small.txt", size_bytes=10)
    with pytest.raises(ValidationError) as exc:
        client.put_upload(declared, b"x" * 11)
    assert_error(exc, 413, "file_too_large", storage=True)


def test_upload_not_found(client: DocCheckClient) -> None:
    with pytest.raises(NotFoundError) as exc:
        client.create_check(upload_id=str(uuid.uuid4()))
    assert_error(exc, 404, "upload_not_found")


def test_upload_consumed(client: DocCheckClient) -> None:
    upload = client.create_upload("a.txt")
    client.put_upload(upload, TEXT.encode())
    client.create_check(upload_id=upload.upload_id)
    with pytest.raises(ConflictError) as exc:
        client.create_check(upload_id=upload.upload_id)
    assert_error(exc, 409, "upload_consumed")
    try:
        client.put_upload(upload, b"other bytes")  # a later PUT changes nothing (refused or ignored)...
    except ConflictError as e:
        assert e.code == "upload_consumed"
    with pytest.raises(ConflictError):
        client.create_check(upload_id=upload.upload_id)  # ...and the id stays consumed


def test_upload_incomplete(client: DocCheckClient) -> None:
    upload = client.create_upload("a.txt")
    with pytest.raises(ConflictError) as exc:
        client.create_check(upload_id=upload.upload_id)
    assert_error(exc, 409, "upload_incomplete")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/hook", "not a url", "https:///no-host"])
def test_invalid_webhook_url(client: DocCheckClient, url: str) -> None:
    with pytest.raises(ValidationError) as exc:
        client.put_webhook(url)
    assert_error(exc, 422, "invalid_webhook_url")


def test_webhook_not_configured(client: DocCheckClient) -> None:
    with pytest.raises(ConflictError) as exc:
        client.create_check(text=TEXT, webhook_url=HOOK)
    assert_error(exc, 409, "webhook_not_configured")


def test_idempotency_conflict_and_replay(emulator, emulator_account: str, client: DocCheckClient) -> None:
    first = client.create_check(text=TEXT, idempotency_key="k-1")
    replay = client.create_check(text=TEXT, idempotency_key="k-1", name="other name", metadata={"x": 1})
    assert replay.replayed and replay.id == first.id and not first.replayed
    assert emulator.account_state(emulator_account)["checks"] == 1
    with pytest.raises(ConflictError) as exc:
        client.create_check(text=TEXT + " changed", idempotency_key="k-1")
    assert_error(exc, 409, "idempotency_conflict")
    with pytest.raises(ConflictError):
        client.create_check(text=TEXT, products=["ai", "similarity"], idempotency_key="k-1")


def test_insufficient_balance(emulator) -> None:
    key = emulator.new_account(balance_cents=0)
    with DocCheckClient(emulator.base_url, key, retry=NO_RETRY) as c, pytest.raises(PaymentRequiredError) as exc:
        c.create_check(text=TEXT)
    assert_error(exc, 402, "insufficient_balance")
    assert emulator.account_state(key)["checks"] == 0


def test_rate_limited(emulator_faults, client: DocCheckClient) -> None:
    emulator_faults.set_faults(rate_limit_per_s=1)
    client.list_checks()
    with pytest.raises(RateLimitError) as exc:
        client.list_checks()
    assert_error(exc, 429, "rate_limited")
    assert exc.value.retry_after is not None and exc.value.retry_after >= 1


def test_not_found_unknown_and_other_account(emulator, client: DocCheckClient) -> None:
    with pytest.raises(NotFoundError) as exc:
        client.get_check(str(uuid.uuid4()))
    assert_error(exc, 404, "not_found")
    other = emulator.new_account()
    with DocCheckClient(emulator.base_url, other, retry=NO_RETRY) as c:
        theirs = c.create_check(text=TEXT)
    with pytest.raises(NotFoundError) as exc:
        client.get_check(theirs.id)
    assert_error(exc, 404, "not_found")
    with pytest.raises(NotFoundError):
        client.get_file(theirs.id, "original")


def test_async_submit_upload_flow(emulator, emulator_account: str, tmp_path: Path) -> None:
    big = write_over_4mb(tmp_path / "big.md")

    async def main():
        async with AsyncDocCheckClient(emulator.base_url, emulator_account, retry=NO_RETRY) as c:
            sub = await c.submit(FileDocument(big), products=["ai"], idempotency_key="async-big")
            return sub, await c.get_check(sub.check.id)

    sub, got = asyncio.run(main())
    assert sub.mode == "upload" and got.name == "big.md" and got.words
    assert emulator.account_state(emulator_account)["waiting_uploads"] == 0
