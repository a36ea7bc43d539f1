"""Client of the document-check service: sync and async, one core, typed models and errors.

Usable on its own from a notebook or a script (no Prefect)::

    from doccheck.client import DocCheckClient, FileDocument
    with DocCheckClient() as client:          # DOCCHECK_BASE_URL / DOCCHECK_API_KEY
        sub = client.submit(FileDocument("essay.pdf"), products=["ai"], idempotency_key="row-1")
        print(client.get_check(sub.check.id).status)

See docs/client.md for errors, retries and assumptions.
"""

from __future__ import annotations

from doccheck.client import assumptions
from doccheck.client._async import AsyncDocCheckClient
from doccheck.client._config import tls_context
from doccheck.client._lanes import ConnectionLanes, lanes_for
from doccheck.client._models import (
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
from doccheck.client._probe import DIFFERS, HOLDS, UNTESTED, Finding, ProbeResult, probe
from doccheck.client._profile import (
    INVALID_RESPONSE,
    ServiceProfile,
    adopt_refused_types,
    current_profile,
    learn_refused_type,
    load_profile,
    normalise_check,
    read_error,
    refused_in_process,
    reset_profile,
    unsupported_type_refusal,
)
from doccheck.client._retry import RetryMode, RetryPolicy
from doccheck.client._submit import Document, FileDocument, Plan, Submission, TextDocument, plan_document, read_ahead
from doccheck.client._sync import DocCheckClient
from doccheck.domain import estimate_cost_cents
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

#: The interface's facts and assumptions (sizes, headers, prices), as one namespace: ``A.UPLOAD_MAX_BYTES``.
_PUBLIC_MODULES = ("assumptions",)

__all__ = [
    "DIFFERS",
    "HOLDS",
    "INVALID_RESPONSE",
    "UNTESTED",
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
    "Finding",
    "LastDelivery",
    "LocalValidationError",
    "NetworkError",
    "NotFoundError",
    "PaymentRequiredError",
    "PermissionDeniedError",
    "Plan",
    "ProbeResult",
    "RateLimitError",
    "RetryMode",
    "RetryPolicy",
    "ServerError",
    "ServiceProfile",
    "SimilarityResult",
    "SimilaritySource",
    "Submission",
    "TextDocument",
    "UnsupportedDocument",
    "Upload",
    "UploadExpiredError",
    "ValidationError",
    "Webhook",
    "assumptions",
    "adopt_refused_types",
    "current_profile",
    "estimate_cost_cents",
    "lanes_for",
    "learn_refused_type",
    "load_profile",
    "normalise_check",
    "plan_document",
    "probe",
    "read_ahead",
    "read_error",
    "refused_in_process",
    "reset_profile",
    "tls_context",
    "unsupported_type_refusal",
]
