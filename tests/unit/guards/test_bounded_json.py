"""doccheck.guards.bounded_json: strict JSON with size, depth and number bounds."""

from __future__ import annotations

import pytest

from doccheck.errors import JsonRejected
from doccheck.guards import bounded_json


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (b'{"a": NaN}', "non-finite"),
        (b"[Infinity]", "non-finite"),
        (b"[-Infinity]", "non-finite"),
        (b"[1e999]", "finite"),
        (b"[-1e999]", "finite"),
        (b"[" + b"9" * 5000 + b"]", "characters"),
        (b"[1." + b"1" * 100 + b"]", "characters"),
        (b"[" * 33 + b"]" * 33, "nested deeper"),
        (b"[" * 200_000 + b"]" * 200_000, "nested deeper"),
        (b'{"a": ' * 40 + b"1" + b"}" * 40, "nested deeper"),
        (b'["\\ud800"]', "surrogate"),
        (b'{"\\udfff": 1}', "surrogate"),
        (b'["\xff"]', "UTF-8"),
        (b"{", "not valid JSON"),
        (b"", "not valid JSON"),
    ],
)
def test_refused_with_a_reason(text: bytes, reason: str) -> None:
    with pytest.raises(JsonRejected, match=reason):
        bounded_json.loads(text)


def test_size_checked_before_parsing() -> None:
    with pytest.raises(JsonRejected, match="larger than 10 bytes"):
        bounded_json.loads(b'"' + b"a" * 20 + b'"', max_bytes=10)


def test_message_never_echoes_the_content() -> None:
    with pytest.raises(JsonRejected) as caught:
        bounded_json.loads(b'{"secret-looking": NaN}')
    assert "secret-looking" not in str(caught.value)


def test_ordinary_json_passes_unchanged() -> None:
    value = {"a": [1, 2.5, -3e10, None, True, "é\u2028"], "b": {"c": [[[]]]}, "n": 12345678901234567890}
    import json

    assert bounded_json.loads(json.dumps(value)) == value
    assert bounded_json.loads(b"[" * 32 + b"]" * 32) is not None  # exactly at the depth bound


def test_check_value_walks_decoded_values() -> None:
    with pytest.raises(JsonRejected, match="non-finite"):
        bounded_json.check_value({"x": [float("nan")]})
    deep: list[object] = []
    cursor = deep
    for _ in range(50):
        cursor.append([])
        cursor = cursor[0]  # type: ignore[assignment]
    with pytest.raises(JsonRejected, match="nested deeper"):
        bounded_json.check_value(deep)
