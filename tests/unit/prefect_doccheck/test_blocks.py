"""The blocks of ``prefect_doccheck.credentials``: Prefect's own block standards, the
client they build, the webhook secret's rotation rule, and the storage options as the settings
take them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from PIL import Image
from prefect.blocks.core import Block
from prefect.testing.standard_test_suites import BlockStandardTestSuite
from pydantic import SecretStr, ValidationError

import prefect_doccheck
from doccheck.client import AsyncDocCheckClient, DocCheckClient
from prefect_doccheck.credentials import DocCheckCredentials, DocCheckStorage, DocCheckWebhookSecret

LOGO = Path(prefect_doccheck.__file__).parent / "logo.png"
KEY = "sk_test_block_unit"


class _LocalLogo(BlockStandardTestSuite):
    """Prefect's suite, but the logo check reads the bundled copy (the tests use no network)."""

    def test_has_a_valid_image(self, block: type[Block]) -> None:
        assert block._logo_url is not None and str(block._logo_url).endswith("/" + LOGO.name)
        with Image.open(LOGO) as image:
            assert image.width == image.height and 1000 > image.width > 45


class TestDocCheckCredentialsStandards(_LocalLogo):
    @pytest.fixture
    def block(self) -> type[Block]:
        return DocCheckCredentials


class TestDocCheckWebhookSecretStandards(_LocalLogo):
    @pytest.fixture
    def block(self) -> type[Block]:
        return DocCheckWebhookSecret


class TestDocCheckStorageStandards(_LocalLogo):
    @pytest.fixture
    def block(self) -> type[Block]:
        return DocCheckStorage


def test_block_types_have_stable_slugs() -> None:
    assert DocCheckCredentials.get_block_type_slug() == "doccheck-credentials"
    assert DocCheckWebhookSecret.get_block_type_slug() == "doccheck-webhook-secret"
    assert DocCheckStorage.get_block_type_slug() == "doccheck-storage"


@pytest.mark.parametrize(("kind", "cls"), [("sync", DocCheckClient), ("async", AsyncDocCheckClient)])
def test_get_client_builds_the_project_client_with_the_block_settings(kind: str, cls: type) -> None:
    block = DocCheckCredentials(base_url="http://127.0.0.1:9/api/v1/", api_key=KEY, timeout=7, connect_timeout=2)
    client = block.get_client(kind)  # type: ignore[call-overload]
    assert isinstance(client, cls)
    assert client.base_url == "http://127.0.0.1:9/api/v1"
    assert client._http.timeout == httpx.Timeout(7, connect=2)
    assert client._http.auth._key.get_secret_value() == KEY  # type: ignore[union-attr]


def test_get_client_rejects_an_unknown_kind() -> None:
    block = DocCheckCredentials(base_url="http://127.0.0.1:9/api/v1", api_key=KEY)
    with pytest.raises(ValueError, match="client_type must be 'sync' or 'async'"):
        block.get_client("threaded")  # type: ignore[call-overload]


def test_the_key_is_masked_in_repr_and_dumps() -> None:
    block = DocCheckCredentials(base_url="http://127.0.0.1:9/api/v1", api_key=KEY)
    assert KEY not in repr(block) and KEY not in str(block)
    assert KEY not in block.model_dump_json()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"base_url": "ftp://service.example", "api_key": KEY}, "must start with http"),
        ({"base_url": "http://127.0.0.1:9/api/v1", "api_key": "  "}, "api_key must not be empty"),
        ({"base_url": "http://127.0.0.1:9/api/v1", "api_key": KEY, "timeout": 0}, "greater than 0"),
    ],
)
def test_credentials_reject_bad_fields(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        DocCheckCredentials(**fields)  # type: ignore[arg-type]


def test_webhook_secret_accepts_the_previous_one_until_its_end() -> None:
    until = datetime(2026, 12, 1, tzinfo=UTC)
    block = DocCheckWebhookSecret(current="whsec_new", previous="whsec_old", previous_valid_until=until)
    before = [s.get_secret_value() for s in block.accepted_secrets(until - timedelta(seconds=1))]
    after = [s.get_secret_value() for s in block.accepted_secrets(until)]
    assert before == ["whsec_new", "whsec_old"]
    assert after == ["whsec_new"]
    assert all(isinstance(s, SecretStr) for s in block.accepted_secrets(until))


def test_webhook_secret_without_rotation_is_just_current() -> None:
    assert [s.get_secret_value() for s in DocCheckWebhookSecret(current=" whsec_a ").accepted_secrets()] == ["whsec_a"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"current": "a", "previous": "b"}, "previous_valid_until is required"),
        ({"current": "a", "previous_valid_until": datetime(2026, 1, 1, tzinfo=UTC)}, "no previous secret"),
        ({"current": "a", "previous": "b", "previous_valid_until": datetime(2026, 1, 1)}, "needs a timezone"),
        ({"current": " "}, "current must not be empty"),
    ],
)
def test_webhook_secret_rejects_an_incomplete_rotation(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        DocCheckWebhookSecret(**fields)  # type: ignore[arg-type]


def test_a_block_passed_as_a_flow_parameter_is_sent_masked() -> None:
    # What Prefect sends to its API when a flow is called with an (unsaved) block object.
    import json
    import uuid

    from prefect.client.schemas.actions import FlowRunCreate

    block = DocCheckCredentials(base_url="http://127.0.0.1:9/api/v1", api_key=KEY)
    sent = json.dumps(FlowRunCreate(flow_id=uuid.uuid4(), parameters={"credentials": block}).model_dump(mode="json"))
    assert KEY not in sent and '"api_key": "**********"' in sent


STORAGE = {"s3": {"endpoint_url": "http://127.0.0.1:9", "key": "AKIA_UNIT", "secret": "s3cret_unit"}}


def test_storage_options_are_the_settings_storage_options() -> None:
    from doccheck.config import load_settings

    block = DocCheckStorage(options=STORAGE)
    (value,) = block.settings().values()
    assert isinstance(value, SecretStr) and json.loads(value.get_secret_value()) == STORAGE
    assert load_settings(block=block.settings()).storage.options == value
    # the JSON text DOCCHECK_STORAGE_OPTIONS holds is accepted too
    assert DocCheckStorage(options=json.dumps(STORAGE)).options.get_secret_value() == STORAGE  # type: ignore[arg-type]


def test_storage_options_are_masked_wherever_the_block_is_shown_or_sent() -> None:
    import uuid

    block = DocCheckStorage(options=STORAGE)
    document = block._to_block_document(name="s", block_schema_id=uuid.uuid4(), block_type_id=uuid.uuid4())
    shown = [repr(block), str(block), block.model_dump_json(), str(block.settings()), repr(document)]
    for text in shown:
        assert "s3cret_unit" not in text and "AKIA_UNIT" not in text, text
    assert "options" in block.model_json_schema()["secret_fields"][0]


@pytest.mark.parametrize("options", ['{"s3": {"secret": "s3cret_unit"', '["s3cret_unit"]', 42, {"k": object()}])
def test_storage_options_that_the_settings_cannot_read_are_refused_without_their_value(options: object) -> None:
    with pytest.raises(ValidationError) as raised:
        DocCheckStorage(options=options)  # type: ignore[arg-type]
    message = str(raised.value)
    assert "s3cret_unit" not in message
    assert "JSON object" in message or "valid dictionary" in message, message
