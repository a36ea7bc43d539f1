"""Fuzzing: no input, however malformed, makes the emulator answer 5xx (no fault injected).

Two generators, bounded so the module stays well under a minute:
* schemathesis, from the emulator's own ``/api/v1/openapi.json`` (positive AND negative
  cases: wrong types, missing fields, unexpected values), every operation;
* hypothesis over raw httpx requests: arbitrary bytes, content types and JSON values
  thrown at the body-parsing endpoints, which schemathesis keeps too well-formed.
Every 4xx must also carry the service's error body.
"""

from __future__ import annotations

import json
from collections import Counter

import httpx
import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fixtures.emulator import EmulatorHandle

pytestmark = pytest.mark.integration

SCHEMATHESIS_EXAMPLES_PER_OPERATION = 30
RAW_EXAMPLES = 150
FUZZ_SETTINGS = dict(
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
)


def _assert_service_shape(status: int, body: bytes, what: str) -> None:
    assert status < 500, f"{what} -> {status}: {body[:300]!r}"
    if status >= 400:
        payload = json.loads(body)
        assert set(payload) == {"error"} and {"code", "message"} <= set(payload["error"]), (what, payload)


def test_schemathesis_finds_no_5xx(emulator: EmulatorHandle, emulator_account: str) -> None:
    import schemathesis
    from schemathesis.generation import GenerationMode

    schema = schemathesis.openapi.from_url(f"{emulator.base_url}/openapi.json")
    session = requests.Session()
    session.trust_env = False
    headers = {"Authorization": f"Bearer {emulator_account}"}
    counts: Counter[str] = Counter()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    for operation in operations:
        label = operation.label
        strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE) | operation.as_strategy(
            generation_mode=GenerationMode.NEGATIVE
        )

        @settings(max_examples=SCHEMATHESIS_EXAMPLES_PER_OPERATION, **FUZZ_SETTINGS)
        @given(case=strategy)
        def run(case: object) -> None:
            response = case.call(base_url=emulator.root_url, headers=headers, session=session, timeout=30)  # type: ignore[attr-defined]
            counts[label] += 1  # noqa: B023 - run() runs at once, within this iteration
            _assert_service_shape(response.status_code, response.content, f"{label} {case!r}"[:500])  # noqa: B023

        run()
    total = sum(counts.values())
    print(f"\nschemathesis: {total} cases over {len(counts)} operations: {dict(counts)}")
    assert total >= 200


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
FIELDS = st.sampled_from(["text", "file", "upload_id", "products", "name", "metadata", "webhook_url", "filename",
                          "content_type", "size_bytes", "url", "seconds"])  # fmt: skip
BODIES = st.one_of(
    st.binary(max_size=300),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(FIELDS, JSON_VALUES, max_size=5).map(lambda v: json.dumps(v).encode()),
)
CONTENT_TYPES = st.sampled_from([
    "application/json", "multipart/form-data", "multipart/form-data; boundary=b", "text/plain",
    "application/x-www-form-urlencoded", "", "application/json; charset=latin-1", "image/png",
])  # fmt: skip
TARGETS = st.sampled_from([
    ("POST", "/checks"), ("POST", "/uploads"), ("PUT", "/webhook"), ("POST", "/webhook/rotate"),
    ("GET", "/checks"), ("GET", "/checks/x"), ("DELETE", "/webhook"), ("PATCH", "/checks"),
    ("GET", "/checks/x/files/pdf"),
])  # fmt: skip


def test_raw_requests_find_no_5xx(emulator: EmulatorHandle, emulator_account: str) -> None:
    cases = Counter()
    with httpx.Client(base_url=emulator.base_url, trust_env=False, timeout=30) as client:

        @settings(max_examples=RAW_EXAMPLES, **FUZZ_SETTINGS)
        @given(
            target=TARGETS,
            body=BODIES,
            ctype=CONTENT_TYPES,
            key=st.none() | st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=300),
        )
        def run(target: tuple[str, str], body: bytes, ctype: str, key: str | None) -> None:
            method, path = target
            headers = {"Authorization": f"Bearer {emulator_account}", "Content-Type": ctype}
            if key is not None:
                headers["Idempotency-Key"] = key or "k"
            response = client.request(method, path, content=body, headers=headers)
            cases[method] += 1
            _assert_service_shape(response.status_code, response.content, f"{method} {path} {ctype} {body[:80]!r}")

        run()
    print(f"\nraw hypothesis: {sum(cases.values())} requests")
    assert sum(cases.values()) >= RAW_EXAMPLES // 2


# ---- hostile JSON and multipart (issue 13): non-finite, huge, deep, odd ---------------------

SCALAR_TEXTS = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e-400", "-0.0", "null", "true",
                     '"\\ud800"', '"\\udfff x"', '"\\u0000"']),
    st.integers(min_value=-(10**80), max_value=10**80).map(str),
    st.integers(min_value=60, max_value=6000).map(lambda n: "9" * n),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(max_size=8).map(json.dumps),
)  # fmt: skip
JSON_TEXTS = st.recursive(
    SCALAR_TEXTS,
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]")
        | st.lists(st.tuples(st.text(max_size=6).map(json.dumps), inner), max_size=3).map(
            lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}"
        )
    ),
    max_leaves=10,
)
DEEP_TEXTS = st.one_of(
    st.integers(min_value=25, max_value=120_000).map(lambda n: "[" * n + "]" * n),
    st.integers(min_value=25, max_value=3_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(min_value=25, max_value=3_000).map(lambda n: "[" * n),  # unterminated
)
ANY_JSON_TEXT = st.one_of(JSON_TEXTS, DEEP_TEXTS)
HOSTILE_CHECK_BODIES = st.one_of(
    ANY_JSON_TEXT.map(lambda m: '{"text": "one two three four", "metadata": ' + m + "}"),
    st.tuples(FIELDS, ANY_JSON_TEXT).map(lambda fv: '{"text": "one two three", "' + fv[0] + '": ' + fv[1] + "}"),
    ANY_JSON_TEXT,
).map(lambda s: s.encode("utf-8", "surrogatepass"))


def _multipart(boundary: str, parts: list[tuple[str, str | None, bytes]], close: bool) -> bytes:
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode("utf-8", "surrogatepass")
        out += data + b"\r\n"
    return out + (f"--{boundary}--\r\n".encode() if close else b"")


PART_NAMES = st.sampled_from(["metadata", "products", "file", "text", "name", "upload_id", "webhook_url", "x"])
MULTIPART_CASES = st.tuples(
    st.sampled_from(["b", "----x", "a" * 70, "ünï"]),
    st.lists(st.tuples(PART_NAMES, st.none() | st.sampled_from(["a.txt", "a.pdf", "", "../../x.docx", "a\x00.txt"]),
                       st.one_of(ANY_JSON_TEXT.map(lambda s: s.encode("utf-8", "surrogatepass")),
                                 st.binary(max_size=60))),
             max_size=5),
    st.booleans(),
)  # fmt: skip
HOSTILE_EXAMPLES = 120


def test_hostile_json_and_multipart_find_no_5xx(emulator: EmulatorHandle, emulator_account: str) -> None:
    seen = Counter()
    with httpx.Client(base_url=emulator.base_url, trust_env=False, timeout=30) as client:
        auth = {"Authorization": f"Bearer {emulator_account}"}

        @settings(max_examples=HOSTILE_EXAMPLES, **FUZZ_SETTINGS)
        @given(body=HOSTILE_CHECK_BODIES, target=st.sampled_from(["/checks", "/uploads", "/webhook"]))
        def json_case(body: bytes, target: str) -> None:
            method = "PUT" if target == "/webhook" else "POST"
            response = client.request(
                method, target, content=body, headers={**auth, "Content-Type": "application/json"}
            )
            seen[f"json {response.status_code}"] += 1
            _assert_service_shape(response.status_code, response.content, f"{method} {target} {body[:120]!r}")

        @settings(max_examples=HOSTILE_EXAMPLES, **FUZZ_SETTINGS)
        @given(case=MULTIPART_CASES)
        def multipart_case(case: tuple[str, list[tuple[str, str | None, bytes]], bool]) -> None:
            boundary, parts, close = case
            body = _multipart(boundary, parts, close)
            ctype = f"multipart/form-data; boundary={boundary}".encode()  # raw bytes, as a client may send
            response = client.post("/checks", content=body, headers={**auth, "Content-Type": ctype})
            seen[f"multipart {response.status_code}"] += 1
            _assert_service_shape(response.status_code, response.content, f"multipart {body[:160]!r}")

        json_case()
        multipart_case()
        listing = client.get("/checks", headers=auth, params={"limit": 100})  # never poisoned
        assert listing.status_code == 200, listing.text
        json.loads(listing.content, parse_constant=lambda c: pytest.fail(f"listing holds {c}"))
    print(f"\nhostile json/multipart: {dict(seen)}")
    assert sum(seen.values()) >= HOSTILE_EXAMPLES
