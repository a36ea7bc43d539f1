"""Client of the document-check service: sync and async, one core, typed models and errors.

Usable on its own from a notebook or a script (no Prefect)::

    from doccheck.client import DocCheckClient, FileDocument
    with DocCheckClient() as client:          # DOCCHECK_BASE_URL / DOCCHECK_API_KEY
        sub = client.submit(FileDocument("essay.pdf"), products=["ai"], idempotency_key="row-1")
        print(client.get_check(sub.check.id).status)

See docs/client.md for errors, retries and assumptions.
"""

from __future__ import annotations

from doccheck.client._config import tls_context
from doccheck.client.assumptions import estimate_cost_cents
from doccheck.client.async_ import AsyncDocCheckClient
from doccheck.client.lanes import ConnectionLanes, lanes_for
from doccheck.client.models import (
    AiResult,
    Check,
    CheckFiles,
    CheckList,
    Cost,
    ErrorInfo,
    Event,
    EventCheck,
    LastDelivery,
    SimilarityResult,
    SimilaritySource,
    Upload,
    Webhook,
)
from doccheck.client.retry import RetryMode, RetryPolicy
from doccheck.client.submit import Document, FileDocument, Plan, Submission, TextDocument, plan_document
from doccheck.client.sync import DocCheckClient
from doccheck.errors import (
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    DocCheckError,
    DocumentNotFound,
    DocumentTooLarge,
    EmptyDocument,
    LocalValidationError,
    NetworkError,
    NotFoundError,
    PaymentRequiredError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    UnsupportedDocument,
    UploadExpiredError,
    ValidationError,
)

__all__ = [
    "AiResult",
    "AsyncDocCheckClient",
    "AuthenticationError",
    "Check",
    "CheckFiles",
    "CheckList",
    "ConfigurationError",
    "ConflictError",
    "ConnectionLanes",
    "Cost",
    "DocCheckClient",
    "DocCheckError",
    "Document",
    "DocumentNotFound",
    "DocumentTooLarge",
    "EmptyDocument",
    "ErrorInfo",
    "Event",
    "EventCheck",
    "FileDocument",
    "LastDelivery",
    "LocalValidationError",
    "NetworkError",
    "NotFoundError",
    "PaymentRequiredError",
    "PermissionDeniedError",
    "Plan",
    "RateLimitError",
    "RetryMode",
    "RetryPolicy",
    "ServerError",
    "SimilarityResult",
    "SimilaritySource",
    "Submission",
    "TextDocument",
    "UnsupportedDocument",
    "Upload",
    "UploadExpiredError",
    "ValidationError",
    "Webhook",
    "estimate_cost_cents",
    "lanes_for",
    "plan_document",
    "tls_context",
]
