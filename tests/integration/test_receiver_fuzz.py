"""Fuzzing the receiver: no delivery, however malformed, makes it answer 5xx or log a
traceback, even when correctly signed (the signature proves the sender, not the content).

Bodies come from the same hostile JSON strategies as the emulator's fuzzing (non-finite
numbers, huge numbers, deep and unterminated nesting, lone surrogates) plus raw bytes and
mutated real events; half are signed with the receiver's secret, half carry odd headers.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from doccheck.webhooks import sign
from tests.fixtures.events import event_body
from tests.fixtures.receiver import ReceiverHandle, hostile_receiver
from tests.integration.test_emulator_fuzz import ANY_JSON_TEXT, FUZZ_SETTINGS

pytestmark = pytest.mark.integration

SECRET = "whsec_fuzz_" + uuid.uuid4().hex
EXAMPLES = 200
ALLOWED = {200, 400, 401, 413}


@pytest.fixture(scope="module")
def fuzz_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReceiverHandle]:
    with hostile_receiver(tmp_path_factory.mktemp("fuzz-receiver"), "--max-body-bytes", "262144", secret=SECRET) as r:
        yield r


def _event_with(field: str, value_text: str) -> bytes:
    payload = json.loads(event_body(event_id=f"evt_{uuid.uuid4().hex}"))
    marker = "__FUZZ__"
    payload["check"][field] = marker
    return json.dumps(payload).replace(f'"{marker}"', value_text).encode("utf-8", "surrogatepass")


BODIES = st.one_of(
    st.builds(lambda: event_body(event_id=f"evt_{uuid.uuid4().hex}")),  # a valid event now and then
    ANY_JSON_TEXT.map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.tuples(st.sampled_from(["metadata", "ai", "similarity", "name", "products", "id"]), ANY_JSON_TEXT).map(
        lambda fv: _event_with(*fv)
    ),
    st.binary(max_size=300),
)
HEADERS = st.one_of(
    st.just("sign"),
    st.just("sign"),
    st.sampled_from(["", "t=1", "t=1,v1=" + "0" * 64, "v1=" + "0" * 64, "t=abc,v1=zz", "t=99999999999999999999,v1=" + "a" * 64,
                     "t=1,v1=" + "0" * 64 + "," * 500]),
)  # fmt: skip


def test_receiver_fuzz_finds_no_5xx(fuzz_receiver: ReceiverHandle) -> None:
    seen: Counter[int] = Counter()
    with httpx.Client(trust_env=False, timeout=30) as http:

        @settings(max_examples=EXAMPLES, **FUZZ_SETTINGS)
        @given(body=BODIES, header=HEADERS)
        def run(body: bytes, header: str) -> None:
            value = sign(body, SECRET) if header == "sign" else header
            response = http.post(f"{fuzz_receiver.url}/webhook", content=body,
                                 headers={"Service-Signature": value, "Content-Type": "application/json"})  # fmt: skip
            seen[response.status_code] += 1
            assert response.status_code in ALLOWED, (response.status_code, response.text, body[:200])
            error = response.json().get("error")
            if response.status_code >= 400:
                assert set(error) == {"code", "message"}

        run()
        assert http.get(f"{fuzz_receiver.url}/healthz").status_code == 200
    print(f"\nreceiver fuzz: {dict(seen)}")
    assert seen[400] > 0 and seen[401] > 0 and seen[200] > 0
