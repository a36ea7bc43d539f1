"""Pydantic models of the service's resources.

Every model keeps unknown fields (``extra="allow"``) and uses plain ``str`` for status-like
values: a richer real service that adds a field or a status must not break a bulk run.
Shapes the interface does not show follow DESIGN.md (see :mod:`doccheck.client.assumptions`);
they are all optional so that a check in ``processing`` (with nulls) parses as well.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from doccheck.client._profile import read_error
from doccheck.client.assumptions import TERMINAL_STATUSES


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ErrorInfo(_Model):
    """The inner object of an error envelope, of a failed product or of an event."""

    code: str | None = None
    message: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _any_shape(cls, value: Any) -> Any:
        """``error`` of any shape (a string, a problem object, a list) reads as code + message."""
        if (
            isinstance(value, dict)
            and ("code" in value or "message" in value)
            and all(isinstance(value.get(k), str | None) for k in ("code", "message"))
        ):
            return value  # our shape: kept whole (extra fields too)
        return read_error(value) or {}


class Cost(_Model):
    """Cents charged for a check; ``billed_words`` is what the price is computed on."""

    ai_cents: int = 0
    similarity_cents: int = 0
    total_cents: int = 0
    billed_words: int = 0


class AiResult(_Model):
    """Per-product state of AI detection: ``score`` 0..1 and ``label`` once completed."""

    status: str
    score: float | None = None
    label: str | None = None
    error: ErrorInfo | None = None


class SimilaritySource(_Model):
    """One matched source of a similarity result (``kind`` submission | reference)."""

    source_id: str | None = None
    title: str | None = None
    url: str | None = None
    kind: str | None = None
    matched_words: int | None = None
    percent: float | None = None


class SimilarityResult(_Model):
    """Per-product state of the similarity comparison: ``score`` 0..100 once completed."""

    status: str
    score: float | None = None
    matched_words: int | None = None
    sources: list[SimilaritySource] = Field(default_factory=list)
    error: ErrorInfo | None = None


class CheckFiles(_Model):
    """Which report files are available for download (``get_file``)."""

    similarity_pdf: bool = False
    pdf: bool = False
    original: bool = False


class Check(_Model):
    """A check resource. ``replayed`` is client-side: True when the answer was an
    idempotent replay of an earlier check (``Idempotent-Replayed: true``)."""

    id: str
    object: str = "check"
    status: str
    name: str | None = None
    products: list[str] = Field(default_factory=list)
    words: int | None = None
    created_at: datetime | None = None
    completed_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    cost: Cost = Field(default_factory=Cost)
    error: ErrorInfo | None = None
    ai: AiResult | None = None
    similarity: SimilarityResult | None = None
    files: CheckFiles = Field(default_factory=CheckFiles)
    replayed: bool = Field(default=False, exclude=True)

    @property
    def is_terminal(self) -> bool:
        """True once the check will not change any more (completed or failed)."""
        return self.status in TERMINAL_STATUSES


class CheckList(_Model):
    """One page of ``GET /checks`` (newest first)."""

    object: str = "list"
    data: list[Check] = Field(default_factory=list)
    has_more: bool = False


class Upload(_Model):
    """A signed upload address; send the bytes with ``content_type`` exactly."""

    object: str = "upload"
    upload_id: str
    upload_url: str
    expires_in: int | None = None
    content_type: str
    instructions: str | None = None


class LastDelivery(_Model):
    """Status of the last webhook delivery, as reported by ``GET /webhook``."""

    status: str | None = None
    http_status: int | None = None
    at: datetime | None = None


class Webhook(_Model):
    """The account webhook endpoint. ``secret`` is only present on creation and rotation,
    and is a SecretStr so that printing the model never shows it."""

    object: str = "webhook"
    url: str | None = None
    secret: SecretStr | None = None
    message: str | None = None
    last_delivery: LastDelivery | None = None


class EventCheck(_Model):
    """The check summary carried by an event."""

    id: str
    status: str | None = None
    name: str | None = None
    products: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    ai: AiResult | None = None
    similarity: SimilarityResult | None = None


class Event(_Model):
    """A webhook delivery payload: one product of one check finished."""

    id: str
    type: str
    created_at: datetime | None = None
    product: str | None = None
    check: EventCheck
    error: ErrorInfo | None = None
