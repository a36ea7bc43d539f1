"""Create, read, list and bill checks over real sockets against the session emulator."""

from __future__ import annotations

import io
import uuid

import httpx
import pytest

from tests.factories import ESSAY, TS
from tests.factories import assert_service_error as assert_error
from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration


def _docx(text: str) -> bytes:
    import docx

    d = docx.Document()
    d.add_paragraph(text)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _pdf(text: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


def test_create_text_check_has_every_field_in_documented_types(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        r = c.post("/checks", json={"text": ESSAY, "metadata": {"student": "s-1", "n": [1, 2]}})
    assert r.status_code == 201, r.text
    check = r.json()
    uuid.UUID(check["id"])
    assert check["object"] == "check" and check["status"] == "processing"
    assert check["products"] == ["ai"]
    assert check["name"].startswith("Text ")
    assert check["words"] == 47
    assert TS.match(check["created_at"]) and check["completed_at"] is None and check["error"] is None
    assert check["metadata"] == {"student": "s-1", "n": [1, 2]}
    assert check["cost"]["billed_words"] == 100
    assert {k: check["cost"][k] for k in ("ai_cents", "similarity_cents", "total_cents")} == {
        "ai_cents": 1, "similarity_cents": 0, "total_cents": 1,
    }  # fmt: skip
    assert all(isinstance(v, int) for v in check["cost"].values())
    assert check["ai"] == {"status": "processing"} and check["similarity"] is None
    assert check["files"] == {"similarity_pdf": False, "pdf": False, "original": False}
    assert r.headers["x-request-id"]


def test_processing_completes_products_results_and_files(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        created = c.post("/checks", json={"text": ESSAY, "products": ["similarity", "ai"], "name": "essay 1"}).json()
        assert created["products"] == ["ai", "similarity"]
        emulator.advance(1.5)
        check = c.get(f"/checks/{created['id']}").json()
        assert check["status"] == "completed"
        assert TS.match(check["completed_at"])
        ai = check["ai"]
        assert ai["status"] == "completed" and 0.0 <= ai["score"] <= 1.0 and ai["label"] in {"human", "mixed", "ai"}
        sim = check["similarity"]
        assert sim["status"] == "completed" and 0 <= sim["score"] <= 100 and sim["sources"] == []
        assert check["files"] == {"similarity_pdf": True, "pdf": True, "original": True}
        original = c.get(f"/checks/{created['id']}/files/original")
        assert original.status_code == 200 and original.content == ESSAY.encode()
        for kind in ("pdf", "similarity_pdf"):
            f = c.get(f"/checks/{created['id']}/files/{kind}")
            assert (
                f.status_code == 200
                and f.content.startswith(b"%PDF")
                and f.headers["content-type"] == "application/pdf"
            )
        assert_error(c.get(f"/checks/{created['id']}/files/nope"), 404, "not_found")


def test_similarity_is_computed_against_earlier_submissions_and_references(
    emulator: EmulatorHandle, emulator_account: str
) -> None:
    from doccheck.emulator import reference_text

    reference = reference_text("ref-water-cycle")
    assert reference
    with emulator.client(emulator_account) as c:
        first = c.post("/checks", json={"text": ESSAY, "name": "first", "products": ["similarity"]}).json()
        copied = ESSAY + " " + reference
        second = c.post("/checks", json={"text": copied, "products": ["similarity"]}).json()
        emulator.advance(1.5)
        sim = c.get(f"/checks/{second['id']}").json()["similarity"]
        first_sim = c.get(f"/checks/{first['id']}").json()["similarity"]
    kinds = {s["kind"]: s for s in sim["sources"]}
    assert kinds["submission"]["source_id"] == first["id"] and kinds["submission"]["title"] == "first"
    assert kinds["submission"]["matched_words"] == 47
    assert kinds["reference"]["source_id"] == "ref-water-cycle" and kinds["reference"]["url"].startswith("https://")
    assert sim["score"] == 100.0 and sim["matched_words"] == second["words"]
    # the earlier submission is not compared with the later one
    assert first_sim["sources"] == [] and first_sim["score"] == 0.0


@pytest.mark.parametrize(
    ("filename", "maker"),
    [
        ("essay.txt", lambda t: t.encode()),
        ("essay.md", lambda t: ("# Title\n\n" + t).encode()),
        ("essay.html", lambda t: f"<html><body><p>{t}</p><script>var x=1;</script></body></html>".encode()),
        ("essay.docx", _docx),
        ("essay.pdf", _pdf),
    ],
)
def test_multipart_file_types(emulator: EmulatorHandle, emulator_account: str, filename: str, maker) -> None:
    data = maker("The quick brown fox jumps over the lazy dog.")
    with emulator.client(emulator_account) as c:
        r = c.post(
            "/checks",
            files={"file": (filename, data, "application/octet-stream")},
            data={"products": ["ai", "similarity"], "metadata": '{"row": 7}'},
        )
    assert r.status_code == 201, r.text
    check = r.json()
    assert check["name"] == filename
    assert check["products"] == ["ai", "similarity"]
    assert check["metadata"] == {"row": 7}
    assert check["words"] in (9, 10)  # the .md title adds one word
    assert check["cost"] == {
        "ai_cents": 1,
        "similarity_cents": 2,
        "total_cents": 3,
        "billed_words": 100,
        "refunded_cents": 0,
    }


def test_unsupported_file_type_is_415(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        r = c.post("/checks", files={"file": ("run.exe", b"MZ\x90\x00", "application/octet-stream")})
    assert_error(r, 415, "unsupported_file_type")


def test_multipart_over_4mb_is_413_and_nothing_is_charged(emulator: EmulatorHandle, emulator_account: str) -> None:
    big = b"word " * (4 * 1024 * 1024 // 5 + 10)
    with emulator.client(emulator_account) as c:
        r = c.post("/checks", files={"file": ("big.txt", big, "text/plain")})
    assert_error(r, 413, "file_too_large")
    assert emulator.account_state(emulator_account)["checks"] == 0


def test_multipart_just_under_4mb_is_accepted(emulator: EmulatorHandle, emulator_account: str) -> None:
    data = (b"lorem ipsum dolor sit amet " * 200_000)[: 4 * 1024 * 1024]
    with emulator.client(emulator_account) as c:
        r = c.post("/checks", files={"file": ("big.txt", data, "text/plain")})
    assert r.status_code == 201, r.text


@pytest.mark.parametrize(
    ("kwargs", "status", "code"),
    [
        ({"json": {}}, 422, "invalid_input"),
        ({"json": {"text": "a b c", "upload_id": "x"}}, 422, "invalid_input"),
        ({"json": {"text": "   "}}, 422, "invalid_input"),
        ({"json": {"text": "..."}}, 422, "invalid_input"),
        ({"json": {"text": 12}}, 422, "invalid_input"),
        ({"json": {"text": "a b", "products": ["ai", "plagiarism"]}}, 422, "invalid_products"),
        ({"json": {"text": "a b", "products": []}}, 422, "invalid_products"),
        ({"json": {"text": "a b", "products": "ai"}}, 422, "invalid_products"),
        ({"json": {"text": "a b", "products": [1]}}, 422, "invalid_products"),
        ({"json": {"text": "a b", "metadata": "x"}}, 422, "invalid_input"),
        ({"json": {"text": "a b", "name": ["x"]}}, 422, "invalid_input"),
        ({"json": {"text": "a b", "name": "x" * 1000}}, 422, "invalid_input"),
        ({"json": ["text"]}, 422, "invalid_input"),
        ({"content": b"{not json", "headers": {"content-type": "application/json"}}, 422, "invalid_input"),
        ({"content": b"", "headers": {"content-type": "application/json"}}, 422, "invalid_input"),
        (
            {"content": b'{"text": "a b", "name": "\\ud800"}', "headers": {"content-type": "application/json"}},
            422,
            "invalid_input",
        ),
        (
            {
                "content": b'{"text": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                "headers": {"content-type": "application/json"},
            },
            422,
            "invalid_input",
        ),
        ({"content": b"\xff\xfe", "headers": {"content-type": "application/json"}}, 422, "invalid_input"),
        (
            {"content": b"text=hi", "headers": {"content-type": "application/x-www-form-urlencoded"}},
            422,
            "invalid_input",
        ),
        ({"content": b"garbage", "headers": {"content-type": "multipart/form-data"}}, 422, "invalid_input"),
        (
            {"content": b"--xx\r\ngarbage", "headers": {"content-type": "multipart/form-data; boundary=xx"}},
            422,
            "invalid_input",
        ),
        (
            {"data": {"text": "hello there"}, "files": {"file": ("a.txt", b"hi there", "text/plain")}},
            422,
            "invalid_input",
        ),
        ({"files": {"file": ("a.docx", b"not a docx", "application/octet-stream")}}, 422, "invalid_input"),
        ({"json": {"upload_id": "00000000-0000-0000-0000-000000000000"}}, 404, "upload_not_found"),
        ({"json": {"text": "a b", "webhook_url": "https://93.184.216.34/hook"}}, 409, "webhook_not_configured"),
    ],
)
def test_bad_inputs_get_service_errors_and_cost_nothing(
    emulator: EmulatorHandle, emulator_account: str, kwargs: dict, status: int, code: str
) -> None:
    with emulator.client(emulator_account) as c:
        r = c.post("/checks", **kwargs)
    assert_error(r, status, code)
    account = emulator.account_state(emulator_account)
    assert account["checks"] == 0 and account["charged_cents"] == 0


def test_unknown_fields_are_ignored(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        r = c.post("/checks", json={"text": "hello there", "colour": "blue", "nested": {"a": [1]}})
    assert r.status_code == 201


def test_authentication(emulator: EmulatorHandle) -> None:
    with httpx.Client(base_url=emulator.base_url, trust_env=False) as c:
        assert_error(c.post("/checks", json={"text": "hi"}), 401, "unauthorized")
        assert_error(c.get("/checks", headers={"Authorization": "Bearer nope"}), 401, "unauthorized")
        assert_error(c.get("/checks", headers={"Authorization": "Basic abc"}), 401, "unauthorized")


def test_accounts_are_isolated(emulator: EmulatorHandle) -> None:
    a, b = emulator.new_account(), emulator.new_account()
    with emulator.client(a) as ca, emulator.client(b) as cb:
        check = ca.post("/checks", json={"text": ESSAY}).json()
        assert_error(cb.get(f"/checks/{check['id']}"), 404, "not_found")
        assert_error(cb.get(f"/checks/{check['id']}/files/original"), 404, "not_found")
        assert cb.get("/checks").json()["data"] == []
        upload = ca.post("/uploads", json={"filename": "x.txt"}).json()
        assert_error(cb.post("/checks", json={"upload_id": upload["upload_id"]}), 404, "upload_not_found")
        assert ca.put("/webhook", json={"url": "http://127.0.0.1:9/unused"}).status_code == 200
        assert_error(cb.get("/webhook"), 404, "not_found")
        # similarity never compares with another account's submissions
        other = cb.post("/checks", json={"text": ESSAY, "products": ["similarity"]}).json()
        emulator.advance(1.5)
        assert cb.get(f"/checks/{other['id']}").json()["similarity"]["sources"] == []
    state = emulator.state()["accounts"]
    assert state[a]["checks"] == 2 - 1 and state[b]["checks"] == 1


def test_list_checks_newest_first_with_pagination(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        ids = [c.post("/checks", json={"text": f"document number {i}"}).json()["id"] for i in range(5)]
        page1 = c.get("/checks", params={"limit": 2}).json()
        assert page1["object"] == "list" and page1["has_more"] is True
        assert [x["id"] for x in page1["data"]] == ids[::-1][:2]
        page2 = c.get("/checks", params={"limit": 2, "starting_after": page1["data"][-1]["id"]}).json()
        assert [x["id"] for x in page2["data"]] == ids[::-1][2:4]
        page3 = c.get("/checks", params={"limit": 100, "starting_after": page2["data"][-1]["id"]}).json()
        assert [x["id"] for x in page3["data"]] == ids[:1] and page3["has_more"] is False
        assert_error(c.get("/checks", params={"limit": "abc"}), 422, "invalid_input")
        assert_error(c.get("/checks", params={"limit": 0}), 422, "invalid_input")
        assert_error(c.get("/checks", params={"limit": "²"}), 422, "invalid_input")
        assert_error(c.get("/checks", params={"starting_after": "nope"}), 404, "not_found")
        assert_error(c.get(f"/checks/{uuid.uuid4()}"), 404, "not_found")


def test_billing_charges_at_creation_and_402_when_too_low(emulator: EmulatorHandle) -> None:
    key = emulator.new_account(balance_cents=5)
    words = " ".join(["word"] * 250)  # 250 words → 3 units: ai 3 + similarity 6 = 9 cents
    with emulator.client(key) as c:
        r = c.post("/checks", json={"text": words, "products": ["ai", "similarity"]})
        assert_error(r, 402, "insufficient_balance")
        ok = c.post("/checks", json={"text": words})
        assert ok.status_code == 201 and ok.json()["cost"]["total_cents"] == 3
    state = emulator.account_state(key)
    assert state["balance_cents"] == 2 and state["charged_cents"] == 3 and state["checks"] == 1


def test_failed_product_is_refunded_and_check_failed(emulator_faults: EmulatorHandle, emulator_account: str) -> None:
    emulator = emulator_faults
    with emulator.client(emulator_account) as c:
        emulator.set_faults(product_failure_rate=1.0)
        check = c.post("/checks", json={"text": ESSAY, "products": ["ai", "similarity"]}).json()
        emulator.advance(1.5)
        done = c.get(f"/checks/{check['id']}").json()
    assert done["status"] == "failed" and done["completed_at"]
    assert done["ai"]["status"] == "failed" and done["ai"]["error"]["code"] == "processing_failed"
    assert done["similarity"]["status"] == "failed"
    assert done["error"]["code"] == "product_failed"
    assert done["cost"]["refunded_cents"] == 3
    state = emulator.account_state(emulator_account)
    assert state["charged_cents"] == 0 and state["balance_cents"] == 1_000_000
    assert done["files"]["similarity_pdf"] is False and done["files"]["original"] is True


def test_idempotency_replay_and_conflict(emulator: EmulatorHandle, emulator_account: str) -> None:
    with emulator.client(emulator_account) as c:
        headers = {"Idempotency-Key": "row-1:ai"}
        first = c.post("/checks", json={"text": ESSAY, "name": "a"}, headers=headers)
        replay = c.post("/checks", json={"text": ESSAY, "name": "other name", "products": ["ai"]}, headers=headers)
        assert first.status_code == replay.status_code == 201
        assert replay.json() == first.json()
        assert replay.headers.get("idempotent-replayed") == "true"
        assert_error(c.post("/checks", json={"text": ESSAY + " more"}, headers=headers), 409, "idempotency_conflict")
        assert_error(
            c.post("/checks", json={"text": ESSAY, "products": ["ai", "similarity"]}, headers=headers),
            409, "idempotency_conflict",
        )  # fmt: skip
        # the same key in another account is another namespace
        other = emulator.new_account()
        with emulator.client(other) as c2:
            assert c2.post("/checks", json={"text": ESSAY}, headers=headers).json()["id"] != first.json()["id"]
        # multipart replay of the same bytes
        h2 = {"Idempotency-Key": "file-1"}
        f1 = c.post("/checks", files={"file": ("a.txt", b"some words here", "text/plain")}, headers=h2).json()
        f2 = c.post("/checks", files={"file": ("b.txt", b"some words here", "text/plain")}, headers=h2).json()
        assert f1["id"] == f2["id"]
    state = emulator.account_state(emulator_account)
    assert state["checks"] == 2 and state["charged_cents"] == 2
