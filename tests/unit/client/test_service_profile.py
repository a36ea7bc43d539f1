"""The service profile reads every variant it can without guessing (issue 22)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest

from doccheck.client import DocCheckError
from doccheck.client._models import Check, ErrorInfo
from doccheck.client._profile import (
    INVALID_RESPONSE,
    ServiceProfile,
    current_profile,
    load_profile,
    normalise_check,
    read_error,
    retry_after_seconds,
)
from doccheck.client._responses import error_from_response, parse_check, parse_check_list
from doccheck.errors import PaymentRequiredError, RateLimitError

REQ = httpx.Request("POST", "https://svc.example/api/v1/checks")


def _answer(status: int, **kw: object) -> httpx.Response:
    return httpx.Response(status, request=REQ, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "code", "message"),
    [
        ({"json": {"error": {"code": "insufficient_balance", "message": "top up"}}}, "insufficient_balance", "top up"),
        ({"json": {"message": "balance too low", "code": "no_money"}}, "no_money", "balance too low"),
        ({"json": {"detail": "balance too low"}}, "http_402", "balance too low"),
        ({"json": {"error": "balance too low"}}, "http_402", "balance too low"),
        (
            {
                "json": {
                    "type": "https://svc.example/probs/out-of-credit",
                    "title": "No credit",
                    "detail": "30 c left",
                },
                "headers": {"content-type": "application/problem+json"},
            },
            "out-of-credit",
            "30 c left",
        ),
        ({"text": "balance too low", "headers": {"content-type": "text/plain"}}, "http_402", "balance too low"),
        ({"text": "<html>Bad</html>", "headers": {"content-type": "text/html"}}, "http_402", "Payment Required"),
    ],
)
def test_error_bodies_keep_the_services_own_words(kw: dict[str, object], code: str, message: str) -> None:
    err = error_from_response(_answer(402, **kw))
    assert isinstance(err, PaymentRequiredError)
    assert (err.code, err.message) == (code, message)


def test_retry_after_as_seconds_or_http_date() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_seconds("7", now=now) == 7.0
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=90), usegmt=True), now=now) == 90.0
    assert retry_after_seconds(format_datetime(now - timedelta(seconds=90), usegmt=True), now=now) == 0.0
    assert retry_after_seconds("soon", now=now) is None
    assert retry_after_seconds(None) is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    err = error_from_response(_answer(429, json={}, headers={"Retry-After": later}))
    assert isinstance(err, RateLimitError) and err.retry_after is not None and 100 < err.retry_after <= 120


def _check(**over: object) -> dict[str, object]:
    body: dict[str, object] = {"id": "c1", "status": "processing", "products": ["ai", "similarity"]}
    body.update(over)
    return body


def test_terminal_synonyms_map_and_unknown_words_stay_pending(caplog: pytest.LogCaptureFixture) -> None:
    prof = ServiceProfile()
    data = normalise_check(
        _check(
            status="succeeded",
            ai={"status": "succeeded", "score": 0.2, "label": "human"},
            similarity={"status": "errored", "error": "engine down"},
        ),
        prof,
    )
    check = Check.model_validate(data)
    assert check.status == "completed" and check.is_terminal
    assert check.ai is not None and check.ai.status == "completed"
    assert check.similarity is not None and check.similarity.status == "failed"
    assert check.similarity.error == ErrorInfo(code=None, message="engine down")
    with caplog.at_level(logging.WARNING, logger="doccheck.client"):
        for _ in range(3):
            odd = Check.model_validate(
                normalise_check(_check(status="waiting_for_gpu", ai={"status": "waiting_for_gpu"}), prof)
            )
    assert odd.status == "waiting_for_gpu" and not odd.is_terminal  # kept pending, the word shown
    assert odd.ai is not None and odd.ai.status == "waiting_for_gpu"
    assert sum("waiting_for_gpu" in r.getMessage() for r in caplog.records) <= 1  # warned once


@pytest.mark.parametrize(("product", "score"), [("ai", 87.0), ("ai", -0.1), ("similarity", 140), ("ai", "high")])
def test_a_score_out_of_range_is_that_products_error_never_data(product: str, score: object) -> None:
    data = normalise_check(_check(**{product: {"status": "completed", "score": score}}), ServiceProfile())
    check = Check.model_validate(data)
    result = getattr(check, product)
    assert result.status == "failed" and result.score is None
    assert result.error.code == INVALID_RESPONSE and str(score) in result.error.message


def test_scales_come_from_the_profile() -> None:
    prof = ServiceProfile(ai_score_range=(0, 100), similarity_score_range=(0, 1))
    data = _check(ai={"status": "completed", "score": 87}, similarity={"status": "completed", "score": 0.5})
    check = Check.model_validate(normalise_check(data, prof))
    assert check.ai is not None and check.ai.score == pytest.approx(0.87)  # read on our scales
    assert check.similarity is not None and check.similarity.score == pytest.approx(50.0)


def test_error_of_any_shape() -> None:
    assert read_error("boom") == {"code": None, "message": "boom"}
    assert read_error({"type": "about:blank", "title": "Bad"}) == {"code": None, "message": "Bad"}
    assert read_error([{"msg": "x"}]) == {"code": None, "message": "x"}
    assert read_error(None) is None
    check = parse_check(_answer(200, json=_check(status="failed", error="the engine fell over")))
    assert check.error is not None and check.error.message == "the engine fell over"


def test_a_check_that_cannot_be_read_is_a_request_error_not_a_crash() -> None:
    with pytest.raises(DocCheckError) as info:
        parse_check(_answer(200, json={"status": "processing"}))  # no id
    assert info.value.code == INVALID_RESPONSE
    page = parse_check_list(
        _answer(200, json={"data": [_check(ai={"status": "done", "score": 0.5})], "has_more": False})
    )
    assert page.data[0].ai is not None and page.data[0].ai.status == "completed"


def test_profile_file_by_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "service-profile.json"
    path.write_text(json.dumps({"name": "real", "list_checks": False, "ai_score_range": [0, 100]}))
    monkeypatch.setenv("DOCCHECK_SERVICE_PROFILE", str(path))
    prof = current_profile()
    assert (prof.name, prof.list_checks, prof.ai_score_range) == ("real", False, (0, 100))
    assert load_profile(path) == prof
    monkeypatch.delenv("DOCCHECK_SERVICE_PROFILE")
    assert current_profile() == ServiceProfile()
    path.write_text(" " * 70_000)
    with pytest.raises(ValueError, match="not a profile"):
        load_profile(path)


def test_accepted_types_are_extensions_and_a_refused_type_is_learnt() -> None:
    from doccheck.client import _profile as module

    prof = ServiceProfile.model_validate({"accepted_types": ["ODT", ".pdf", "txt"]})
    assert prof.accepted_types == frozenset({".odt", ".pdf", ".txt"})
    assert prof.accepts_file("essay.odt") and prof.accepts_file("essay.OTT")  # an alias of .odt
    assert not prof.accepts_file("essay.docx") and not prof.accepts_file("README")
    assert ServiceProfile().accepts_file("slides.pptx")  # the emulator's list: all doccheck reads
    try:
        assert module.learn_refused_type("essay.odt") and not module.learn_refused_type("other.odt")
        assert not prof.accepts_file("essay.odt") and not prof.accepts_file("essay.ott")
    finally:
        module._REFUSED_TYPES.clear()


def test_an_unsupported_type_refusal_is_a_415_or_a_422_naming_the_type() -> None:
    from doccheck.client._profile import unsupported_type_refusal

    assert unsupported_type_refusal(415, None, None)
    assert unsupported_type_refusal(422, "unsupported_format", "this file type is not supported")
    assert not unsupported_type_refusal(422, "invalid_input", "the document contains no words")
    assert not unsupported_type_refusal(409, "unsupported_file_type", "type")


def test_the_lists_order_is_claimed_only_from_a_step() -> None:
    from doccheck.client._probe import list_order_of

    t = datetime(2026, 1, 1, tzinfo=UTC)
    same = [t] * 5
    assert list_order_of(same) is None  # a history made in one second shows no order
    assert list_order_of([*same, t + timedelta(minutes=5)]) == "oldest_first"
    assert list_order_of([t, t - timedelta(minutes=1)]) == "newest_first"
    assert list_order_of([t, t - timedelta(minutes=1), t + timedelta(minutes=1)]) == "unknown"
