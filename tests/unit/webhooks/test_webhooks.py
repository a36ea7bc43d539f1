"""Signature verification: vectors computed independently of ``sign``, and every rejection."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from pydantic import SecretStr

from doccheck.errors import (
    EventParseError,
    InvalidSignature,
    MalformedSignature,
    MissingSignature,
    SignatureError,
    StaleSignature,
)
from doccheck.webhooks import _verify as webhooks
from doccheck.webhooks._verify import parse_event, sign, verify

SECRET = "whsec_test_secret"
OTHER = "whsec_rotated_secret"
T = 1_700_000_000
# Fixed, published-style vector: computed once with
#   printf '%s' '1700000000.{"id":"evt_123","type":"check.completed"}' | openssl dgst -sha256 -hmac whsec_test_secret
VECTOR_BODY = b'{"id":"evt_123","type":"check.completed"}'
VECTOR_HEX = "ae976af59969564af17dda5d7ce0b80b78d2d9b00a05e572015b13a8d9216a38"
VECTOR_HEX_OTHER = "6fbd06d752c385cf6f4d5e6200eb034faa3fd15e0c616390531ba48f21159b36"


def by_hand(secret: str, t: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()


def test_fixed_vector_verifies() -> None:
    verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", [SECRET], now=T)


def test_fixed_vector_matches_sign_and_hand_computation() -> None:
    assert by_hand(SECRET, T, VECTOR_BODY) == VECTOR_HEX
    assert sign(VECTOR_BODY, SECRET, timestamp=T) == f"t={T},v1={VECTOR_HEX}"
    assert sign(VECTOR_BODY, SecretStr(OTHER), timestamp=T) == f"t={T},v1={VECTOR_HEX_OTHER}"


@pytest.mark.parametrize("body", [b"", b"{}", "caf\u00e9 \u2603".encode(), bytes(range(256)), b"x" * 100_000])
def test_hand_computed_signatures_verify(body: bytes) -> None:
    verify(body, f"t={T},v1={by_hand(SECRET, T, body)}", [SECRET], now=T + 10)


def test_secretstr_secrets_accepted() -> None:
    verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", [SecretStr(SECRET)], now=T)


def test_tampered_body_rejected() -> None:
    with pytest.raises(InvalidSignature):
        verify(VECTOR_BODY.replace(b"123", b"124"), f"t={T},v1={VECTOR_HEX}", [SECRET], now=T)


def test_reserialised_body_rejected() -> None:
    """Rule 1: the raw body is what is signed; JSON with other spacing is a different body."""
    reserialised = json.dumps(json.loads(VECTOR_BODY)).encode()
    assert reserialised != VECTOR_BODY
    with pytest.raises(InvalidSignature):
        verify(reserialised, f"t={T},v1={VECTOR_HEX}", [SECRET], now=T)


def test_tampered_timestamp_rejected() -> None:
    with pytest.raises(InvalidSignature):
        verify(VECTOR_BODY, f"t={T + 1},v1={VECTOR_HEX}", [SECRET], now=T)


def test_wrong_secret_rejected() -> None:
    with pytest.raises(InvalidSignature):
        verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", ["whsec_wrong"], now=T)


@pytest.mark.parametrize("offset", [301, 3600, -301, -86400])
def test_stale_and_future_timestamps_rejected(offset: int) -> None:
    with pytest.raises(StaleSignature):
        verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", [SECRET], now=T + offset)


@pytest.mark.parametrize("offset", [0, 300, -300, 299.9])
def test_within_tolerance_accepted(offset: float) -> None:
    verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", [SECRET], now=T + offset)


def test_custom_tolerance() -> None:
    verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", [SECRET], tolerance=1000, now=T + 900)
    with pytest.raises(StaleSignature):
        verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", [SECRET], tolerance=10, now=T + 11)


def test_now_defaults_to_current_time() -> None:
    header = sign(VECTOR_BODY, SECRET)
    verify(VECTOR_BODY, header, [SECRET])
    with pytest.raises(StaleSignature):
        verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", [SECRET])  # 2023: long stale


def test_forged_stale_is_invalid_not_stale() -> None:
    """Signature is checked first, so Stale only ever means 'authentic but old'."""
    with pytest.raises(InvalidSignature):
        verify(VECTOR_BODY, f"t={T},v1={'0' * 64}", [SECRET], now=T + 10_000)


@pytest.mark.parametrize("header", [None, "", "   "])
def test_missing_header(header: str | None) -> None:
    with pytest.raises(MissingSignature) as info:
        verify(VECTOR_BODY, header, [SECRET], now=T)
    assert info.value.http_status == 400


@pytest.mark.parametrize(
    "header",
    [
        f"t={T}",  # no v1
        f"v1={VECTOR_HEX}",  # no t
        f"t=,v1={VECTOR_HEX}",
        f"t=17e8,v1={VECTOR_HEX}",  # t not digits
        f"t=-{T},v1={VECTOR_HEX}",
        f"t={T}.5,v1={VECTOR_HEX}",
        f"t=\u0661\u0662\u0663,v1={VECTOR_HEX}",  # Arabic-Indic digits are not ASCII digits
        f"t={T},v1={VECTOR_HEX[:63]}",  # 63 hex
        f"t={T},v1={VECTOR_HEX}0",  # 65 hex
        f"t={T},v1={VECTOR_HEX[:62]}zz",  # not hex
        f"t={T},v1=",
        f"t={T},t={T},v1={VECTOR_HEX}",  # two t
        f"t={T};v1={VECTOR_HEX}",  # wrong separator
        f"{T},{VECTOR_HEX}",  # no keys
        "t=1" + "0" * 20 + f",v1={VECTOR_HEX}",  # absurdly long t
        "x" * 5000,
    ],
)
def test_malformed_headers(header: str) -> None:
    with pytest.raises(MalformedSignature) as info:
        verify(VECTOR_BODY, header, [SECRET], now=T)
    assert info.value.http_status == 400


def test_uppercase_hex_accepted() -> None:
    """Decision: "64 hex characters" includes A-F; compared case-insensitively."""
    verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX.upper()}", [SECRET], now=T)


def test_whitespace_and_unknown_keys_tolerated() -> None:
    verify(VECTOR_BODY, f" t={T} , v0=abc, v1={VECTOR_HEX} ", [SECRET], now=T)


def test_rotation_two_secrets_either_order() -> None:
    old_header = f"t={T},v1={VECTOR_HEX}"
    new_header = f"t={T},v1={VECTOR_HEX_OTHER}"
    for secrets in ([SECRET, OTHER], [OTHER, SECRET]):
        verify(VECTOR_BODY, old_header, secrets, now=T)
        verify(VECTOR_BODY, new_header, secrets, now=T)
    with pytest.raises(InvalidSignature):
        verify(VECTOR_BODY, old_header, [OTHER], now=T)  # after the rotation window ends


def test_header_with_two_v1_passes_if_one_matches() -> None:
    verify(VECTOR_BODY, f"t={T},v1={'0' * 64},v1={VECTOR_HEX}", [SECRET], now=T)


def test_no_secrets_is_a_configuration_error() -> None:
    with pytest.raises(ValueError):
        verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", [], now=T)
    with pytest.raises(ValueError):
        verify(VECTOR_BODY, f"t={T},v1={VECTOR_HEX}", ["", SecretStr("")], now=T)


def test_body_must_be_bytes() -> None:
    with pytest.raises(TypeError):
        verify(VECTOR_BODY.decode(), f"t={T},v1={VECTOR_HEX}", [SECRET], now=T)  # type: ignore[arg-type]


def test_error_messages_never_contain_secret_body_or_expected_signature() -> None:
    body = b'{"secret_field": "PRIVATE-BODY-CONTENT"}'
    good = by_hand(SECRET, T, body)
    attempts = [
        (body, f"t={T},v1={'a' * 64}", [SECRET], T),
        (body, f"t={T},v1={good}", [SECRET], T + 9999),
        (body, "garbage", [SECRET], T),
        (body, None, [SECRET], T),
    ]
    for raw, header, secrets, now in attempts:
        with pytest.raises(SignatureError) as info:
            verify(raw, header, secrets, now=now)
        text = str(info.value) + repr(info.value)
        assert SECRET not in text and "PRIVATE-BODY-CONTENT" not in text
        if header and "9999" not in text:
            assert good not in text


def test_http_status_mapping() -> None:
    assert MissingSignature.http_status == MalformedSignature.http_status == 400
    assert InvalidSignature.http_status == StaleSignature.http_status == 401
    for cls in (MissingSignature, MalformedSignature, InvalidSignature, StaleSignature):
        assert issubclass(cls, SignatureError)


EVENT = {
    "id": "evt_1",
    "type": "check.completed",
    "created_at": "2026-01-01T00:00:00.000Z",
    "product": "ai",
    "check": {
        "id": "chk_1",
        "status": "completed",
        "name": "essay.txt",
        "products": ["ai"],
        "metadata": {"row": 7},
        "ai": {"status": "completed"},
        "similarity": None,
        "future_field": 1,
    },
    "error": None,
    "livemode": False,
}


def test_parse_event_typed_and_keeps_unknown_fields() -> None:
    event = parse_event(json.dumps(EVENT).encode())
    assert event.id == "evt_1" and event.type == "check.completed" and event.product == "ai"
    assert event.check.id == "chk_1" and event.check.metadata == {"row": 7}
    assert event.check.ai is not None and event.check.ai.status == "completed"
    assert event.check.similarity is None and event.error is None
    assert event.model_extra == {"livemode": False}
    assert event.check.model_extra == {"future_field": 1}


def test_parse_failed_event_error() -> None:
    failed = dict(EVENT, type="check.failed", error={"code": "processing_failed", "message": "boom"})
    event = parse_event(json.dumps(failed).encode())
    assert event.error is not None and event.error.code == "processing_failed"


@pytest.mark.parametrize(
    "raw", [b"not json PRIVATE", b"[1,2]", b"\xff\xfe", json.dumps({"id": "e", "type": "x"}).encode()]
)
def test_parse_event_errors_are_clear_and_do_not_echo(raw: bytes) -> None:
    with pytest.raises(EventParseError) as info:
        parse_event(raw)
    assert "PRIVATE" not in str(info.value)


def test_parse_event_names_missing_field() -> None:
    with pytest.raises(EventParseError, match="check"):
        parse_event(json.dumps({"id": "e", "type": "check.completed"}).encode())


def test_signing_module_and_webhooks_agree_on_header_name() -> None:
    assert webhooks.SIGNATURE_HEADER == "Service-Signature"


# --- properties -------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

bodies_st = st.binary(max_size=2000)
times_st = st.integers(min_value=0, max_value=10**12)


@settings(max_examples=150, deadline=None)
@given(body=bodies_st, secret=st.text(min_size=1, max_size=40), t=times_st)
def test_property_hand_signature_always_verifies(body: bytes, secret: str, t: int) -> None:
    verify(body, f"t={t},v1={by_hand(secret, t, body)}", [secret], now=t)
    assert sign(body, secret, timestamp=t) == f"t={t},v1={by_hand(secret, t, body)}"


@settings(max_examples=150, deadline=None)
@given(body=bodies_st, secret=st.text(min_size=1, max_size=40), t=times_st, data=st.data())
def test_property_any_body_change_is_rejected(body: bytes, secret: str, t: int, data: st.DataObject) -> None:
    other = data.draw(bodies_st.filter(lambda b: b != body))
    with pytest.raises(InvalidSignature):
        verify(other, f"t={t},v1={by_hand(secret, t, body)}", [secret], now=t)


@settings(max_examples=200, deadline=None)
@given(header=st.text(max_size=200))
def test_property_arbitrary_headers_never_crash(header: str) -> None:
    """Whatever arrives in the header, the answer is a SignatureError, never another exception."""
    with pytest.raises(SignatureError):
        verify(b"{}", header, [SECRET], now=T)
