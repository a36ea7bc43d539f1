"""Prefect blocks holding what a run needs to talk to the document-check service.

Why blocks: a deployment's credentials belong in Prefect's block store (encrypted at rest,
edited in the UI, referenced by name), not in a flow parameter or a worker's environment.
``DocCheckCredentials`` follows Prefect's ``CredentialsBlock`` contract (as ``prefect_slack``
does): the service's address and key plus a ``get_client()`` that builds the project's own
client. ``DocCheckWebhookSecret`` holds the receiver's signing secret through a rotation.
``DocCheckStorage`` holds the storage options (fsspec's: keys, endpoint, account) of a term
kept in a bucket, for flow runs on container work pools that have no credentials of their own.

Every Prefect process imports this module (the ``prefect.collections`` entry point), so it
imports nothing heavier than pydantic and Prefect's block base; the HTTP client is imported
inside ``get_client``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, overload

from prefect.blocks.abstract import CredentialsBlock
from prefect.blocks.core import Block
from prefect.types import SecretDict
from pydantic import ConfigDict, Field, SecretStr, field_validator, model_validator

from doccheck.config import parse_storage_options
from doccheck.domain import secrets_accepted_at

if TYPE_CHECKING:
    import httpx

    from doccheck.client import AsyncDocCheckClient, DocCheckClient

#: Where the blocks are documented (docs/prefect.md, as published) and their logo (the same
#: image is bundled as ``prefect_doccheck/logo.png``, square, 256 px). The project has no
#: published site yet: set these to the real addresses when it has one.
DOCUMENTATION_URL = "https://doccheck.readthedocs.io/en/latest/prefect/"
LOGO_URL = "https://doccheck.readthedocs.io/en/latest/_static/logo.png"


class DocCheckCredentials(CredentialsBlock):
    """Address and API key of the document-check service, for flows, tasks and scripts.

    The key is a ``SecretStr``: Prefect stores it encrypted, shows it masked, and it never
    appears in a log line, a flow-run parameter or a report. Pass the block (or its name)
    as the ``credentials`` parameter of ``bulk_check`` or ``collect_results``.

    Examples:
        Load stored credentials and check a document:
        ```python
        from prefect_doccheck import DocCheckCredentials
        from doccheck.client import TextDocument

        credentials = DocCheckCredentials.load("BLOCK_NAME")
        with credentials.get_client("sync") as client:
            submission = client.submit(TextDocument("An essay."), products=["ai"], idempotency_key="row-1")
        ```
    """

    _block_type_name = "DocCheck Credentials"
    _logo_url = LOGO_URL  # type: ignore[assignment]  # Prefect coerces str to HttpUrl
    _documentation_url = DOCUMENTATION_URL  # type: ignore[assignment]

    base_url: str = Field(
        default=...,
        title="Base URL",
        description="Address of the service's API, ending in /api/v1 (for example https://service.example/api/v1).",
        examples=["https://service.example/api/v1"],
    )
    api_key: SecretStr = Field(
        default=...,
        title="API key",
        description="API key of the service, sent as a bearer token to the service's origin only.",
    )
    timeout: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="Seconds each request may take to read, write or wait for a pooled connection.",
    )
    connect_timeout: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="Seconds to wait for a connection to the service or the storage origin.",
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        """Reject what cannot be the service's address now, not at the first request."""
        value = value.strip()
        if not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("api_key")
    @classmethod
    def _non_empty_key(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():
            raise ValueError("api_key must not be empty")
        return SecretStr(value.get_secret_value().strip())

    def httpx_timeout(self) -> httpx.Timeout:
        """The block's timeouts as one ``httpx.Timeout`` (connect apart from the rest)."""
        import httpx

        return httpx.Timeout(self.timeout, connect=self.connect_timeout)

    @overload
    def get_client(self, client_type: Literal["sync"] = "sync") -> DocCheckClient: ...

    @overload
    def get_client(self, client_type: Literal["async"]) -> AsyncDocCheckClient: ...

    def get_client(self, client_type: Literal["sync", "async"] = "sync") -> DocCheckClient | AsyncDocCheckClient:
        """A client of the service with this block's address, key and timeouts.

        ``"sync"`` gives a :class:`~doccheck.client.DocCheckClient`, ``"async"`` an
        :class:`~doccheck.client.AsyncDocCheckClient`; use either as a context manager.
        """
        from doccheck.client import AsyncDocCheckClient, DocCheckClient

        if client_type == "sync":
            return DocCheckClient(self.base_url, self.api_key, timeout=self.httpx_timeout())
        if client_type == "async":
            return AsyncDocCheckClient(self.base_url, self.api_key, timeout=self.httpx_timeout())
        raise ValueError(f"client_type must be 'sync' or 'async', not {client_type!r}")


class DocCheckWebhookSecret(Block):
    """The signing secret of the service's webhooks, with the previous one during a rotation.

    A rotation: set ``previous`` to the old secret, ``current`` to the new one and
    ``previous_valid_until`` to when the service stops signing with the old one; until
    then a delivery signed with either is accepted, after it only ``current``.

    Examples:
        Load the secrets the receiver accepts now:
        ```python
        from prefect_doccheck import DocCheckWebhookSecret

        webhook_secret = DocCheckWebhookSecret.load("BLOCK_NAME")
        secrets = webhook_secret.accepted_secrets()
        ```
    """

    _block_type_name = "DocCheck Webhook Secret"
    _logo_url = LOGO_URL  # type: ignore[assignment]
    _documentation_url = DOCUMENTATION_URL  # type: ignore[assignment]

    current: SecretStr = Field(
        default=...,
        description="The secret the service signs webhooks with now.",
    )
    previous: SecretStr | None = Field(
        default=None,
        description="The secret before the last rotation, still accepted until previous_valid_until.",
    )
    previous_valid_until: datetime | None = Field(
        default=None,
        description="When the previous secret stops being accepted (a time with its timezone).",
    )

    @field_validator("current")
    @classmethod
    def _non_empty_current(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():
            raise ValueError("current must not be empty")
        return SecretStr(value.get_secret_value().strip())

    @model_validator(mode="after")
    def _rotation_is_complete(self) -> DocCheckWebhookSecret:
        """A previous secret without an end would be accepted for ever; an end without a
        previous secret means nothing. Both are configuration mistakes, said at once."""
        if self.previous is not None and not self.previous.get_secret_value().strip():
            self.previous = None
        if self.previous is not None and self.previous_valid_until is None:
            raise ValueError("previous_valid_until is required with a previous secret")
        if self.previous is None and self.previous_valid_until is not None:
            raise ValueError("previous_valid_until is set but there is no previous secret")
        if self.previous_valid_until is not None and self.previous_valid_until.tzinfo is None:
            raise ValueError("previous_valid_until needs a timezone (for example 2026-12-01T00:00:00Z)")
        return self

    def accepted_secrets(self, now: datetime | None = None) -> list[SecretStr]:
        """The secrets a delivery may be signed with at ``now`` (default: the current time),
        newest first: ``current``, then ``previous`` while it is still valid."""
        previous = self.previous.get_secret_value() if self.previous is not None else None
        accepted = secrets_accepted_at(self.current.get_secret_value(), previous, self.previous_valid_until, now)
        return [SecretStr(s) for s in accepted]


class DocCheckStorage(Block):
    """Storage options for a term kept at a URL (``s3://``, ``gs://``, ``az://``), for flow runs.

    The options are fsspec's, exactly as ``DOCCHECK_STORAGE_OPTIONS`` takes them (docs/storage.md):
    flat for every URL, or per scheme (``{"s3": {"endpoint_url": ..., "key": ..., "secret": ...}}``).
    Every value is a secret: Prefect stores the block encrypted and shows each value masked. A flow
    run loads the block named by ``DOCCHECK_STORAGE_BLOCK`` (a work pool's job variable: a name, never
    a key) and reads its options as the settings' ``DOCCHECK_STORAGE_OPTIONS`` for as long as it runs;
    they never become a parameter, a log line, an artifact or part of a URL. Where the store's own
    chain already holds credentials (a workload identity, an instance role), no block is needed.

    Examples:
        Save the options of an S3-compatible store once (its name goes to the work pool's
        ``DOCCHECK_STORAGE_BLOCK``), and read them as a flow run does:
        ```python
        from prefect_doccheck import DocCheckStorage
        from doccheck.config import load_settings

        DocCheckStorage(
            options={"s3": {"endpoint_url": "https://minio.example", "key": "KEY_ID", "secret": "SECRET"}}
        ).save("BLOCK_NAME")
        storage = DocCheckStorage.load("BLOCK_NAME")
        options = load_settings(block=storage.settings()).storage.options  # a SecretStr
        ```
    """

    # A validation error never shows what it was given: the options hold credentials.
    model_config = ConfigDict(hide_input_in_errors=True)

    _block_type_name = "DocCheck Storage"
    _logo_url = LOGO_URL  # type: ignore[assignment]
    _documentation_url = DOCUMENTATION_URL  # type: ignore[assignment]

    options: SecretDict = Field(
        default=...,
        title="Storage options",
        description="fsspec storage options as a JSON object, for every URL or per scheme "
        '({"s3": {"endpoint_url": "https://minio.example", "key": "...", "secret": "..."}}), as '
        "DOCCHECK_STORAGE_OPTIONS takes them.",
        examples=[{"s3": {"endpoint_url": "https://minio.example", "key": "KEY_ID", "secret": "SECRET"}}],
    )

    @field_validator("options", mode="before")
    @classmethod
    def _from_json_text(cls, value: Any) -> Any:
        """The JSON text ``DOCCHECK_STORAGE_OPTIONS`` holds is accepted as well as a dict."""
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return parse_storage_options(value) if isinstance(value, str) else value

    @field_validator("options")
    @classmethod
    def _json_object(cls, value: SecretDict) -> SecretDict:
        """What the settings could not read is refused when the block is made, not at a run's first
        URL; the message never repeats a value."""
        try:
            json.dumps(value.get_secret_value())
        except (TypeError, ValueError):
            raise ValueError("options must be a JSON object of fsspec storage options") from None
        return value

    def settings(self) -> dict[str, Any]:
        """The block as the settings take it (``load_settings(block=...)``, ``process_block``): the
        options as ``DOCCHECK_STORAGE_OPTIONS``' JSON, a ``SecretStr``."""
        return {"storage_options": SecretStr(json.dumps(self.options.get_secret_value()))}
