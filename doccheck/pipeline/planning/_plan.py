"""Plan how each valid document is sent, its deterministic Idempotency-Key and its expected cost.

Planning is pure: it reads nothing but the :class:`~doccheck.sources.manifest.ManifestResult` and
sends nothing, so a dry run shows exactly what a real run would do. The Idempotency-Key
depends only on the campaign, the document's content hash and its sorted product set, so
the same document with the same products in the same campaign gets the same key on any
machine and in any rerun — which is what makes a rerun or a resumed crash free of charge.

The size thresholds and the price rule are the domain's (``doccheck.domain``). Which file types
the service takes is the service profile's (``accepted_types``): a file of another type that
doccheck reads is planned as its text, under its own key (:func:`~doccheck.domain.text_key`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Literal, get_args

from doccheck.client import ServiceProfile, current_profile
from doccheck.domain import (
    CENTS_PER_100_WORDS,
    DEFAULT_PRODUCTS,
    MIN_BILLED_WORDS,
    TEXT_KEY_SUFFIX,
    base_key,
    estimate_cost_cents,
    sent_as,
    text_key,
)
from doccheck.sources.manifest import (
    MAX_FILE_BYTES,
    MULTIPART_MAX_BYTES,
    ManifestDocument,
    ManifestError,
    ManifestResult,
    Rejection,
    parse_products,
    read_manifest,
)
from doccheck.storage import UserPath, file_name

__all__ = [
    "BYTES_PER_WORD_ESTIMATE",
    "CENTS_PER_100_WORDS",
    "KEY_PREFIX",
    "MIN_BILLED_WORDS",
    "MODES",
    "as_text",
    "base_key",
    "MULTIPART_MAX_BYTES",
    "TEXT_KEY_SUFFIX",
    "UPLOAD_MAX_BYTES",
    "Mode",
    "Plan",
    "PlannedDocument",
    "choose_mode",
    "estimate_cost_cents",
    "estimated_words",
    "idempotency_key",
    "load_plan",
    "plan_document",
    "plan_documents",
    "run_defaults",
    "sent_as",
    "text_key",
]

Mode = Literal["text", "multipart", "upload"]
MODES: tuple[str, ...] = get_args(Mode)

#: Files above the multipart limit and up to this size go through POST /uploads.
UPLOAD_MAX_BYTES = MAX_FILE_BYTES
#: Version prefix of the key formula: change it (dc2-) if the formula ever changes.
KEY_PREFIX = "dc1-"
#: When a large .docx/.pdf's words are unknown, assume one word per 6 bytes. Binary formats
#: carry far more bytes per word, so this over-estimates — the safe side for a budget.
BYTES_PER_WORD_ESTIMATE = 6


@dataclass(frozen=True)
class PlannedDocument(ManifestDocument):
    """A valid document with how it will be sent, its Idempotency-Key and its expected cost."""

    mode: Mode
    idempotency_key: str
    estimated_cost_cents: int


@dataclass(frozen=True)
class Plan:
    """What a run will send (documents) and what it will not (rejections), for one campaign."""

    campaign: str
    documents: list[PlannedDocument]
    rejections: list[Rejection]
    manifest: UserPath

    def counts_by_mode(self) -> dict[str, int]:
        """Documents per mode, every mode present (0 when none), plus ``rejected``."""
        counts = dict.fromkeys(MODES, 0)
        for doc in self.documents:
            counts[doc.mode] += 1
        counts["rejected"] = len(self.rejections)
        return counts

    def total_words(self) -> int:
        """Known words of the planned documents (documents with unknown words count 0)."""
        return sum(doc.words or 0 for doc in self.documents)

    def unknown_word_documents(self) -> int:
        """How many planned documents have no word count yet (large .docx/.pdf)."""
        return sum(1 for doc in self.documents if doc.words is None)

    def estimated_cost_cents(self) -> int:
        """Expected total charge of the plan (the service's ``cost`` is authoritative)."""
        return sum(doc.estimated_cost_cents for doc in self.documents)

    def metadata_by_document(self) -> dict[str, dict[str, str]]:
        """Allowlisted metadata per document_id, in the shape ``reports.write_reports`` joins."""
        return {doc.document_id: dict(doc.metadata) for doc in self.documents}


def idempotency_key(campaign: str, content_hash: str, products: Iterable[str]) -> str:
    """The deterministic Idempotency-Key of one submission.

    ``"dc1-" + sha256(json({"campaign", "content_sha256", "products": sorted}))`` with sorted
    keys and compact separators; see docs/manifest.md. Name and metadata take no part, as
    at the service: renaming a row must not buy a second check.
    """
    if not campaign:
        raise ValueError("campaign must not be empty")
    # The JSON above, written from its parts: its keys are in sorted order already, and the
    # campaign's and the product set's JSON are the same for every row of a run (cached), so
    # a row costs one string's JSON instead of a whole dict's (~10 µs a row of a term's rerun).
    payload = (
        f'{{"campaign":{_json_text(campaign)},"content_sha256":{json.dumps(content_hash)},'
        f'"products":{_json_products(tuple(products))}}}'
    )
    return KEY_PREFIX + hashlib.sha256(payload.encode("utf-8")).hexdigest()


@lru_cache(maxsize=64)
def _json_text(value: str) -> str:
    return json.dumps(value)


@lru_cache(maxsize=64)
def _json_products(products: tuple[str, ...]) -> str:
    return json.dumps(sorted(set(products)), separators=(",", ":"))


def as_text(doc: PlannedDocument) -> PlannedDocument:
    """``doc`` sent as its extracted text: mode ``text`` under its :func:`text_key`."""
    return replace(doc, mode="text", idempotency_key=text_key(doc.idempotency_key))


def choose_mode(doc: ManifestDocument, profile: ServiceProfile | None = None) -> Mode:
    """text rows → text; a file the service does not take (``profile.accepted_types``, the
    profile in force by default) → its text; files ≤ 4 MiB → multipart; ≤ 50 MiB → upload."""
    if doc.path is None:
        return "text"
    if not (profile or current_profile()).accepts_file(file_name(doc.path)):
        return "text"
    if doc.size_bytes <= MULTIPART_MAX_BYTES:
        return "multipart"
    if doc.size_bytes <= UPLOAD_MAX_BYTES:
        return "upload"
    # read_manifest rejects these; a hand-built document must not slip through.
    raise ValueError(f"document {doc.document_id!r} is {doc.size_bytes} bytes, over the upload limit")


def estimated_words(doc: ManifestDocument) -> int:
    """Known words, or an over-estimate from the size when the words are unknown."""
    if doc.words is not None:
        return doc.words
    return math.ceil(doc.size_bytes / BYTES_PER_WORD_ESTIMATE)


def plan_documents(result: ManifestResult, campaign: str | None = None) -> Plan:
    """Plan every valid document of ``result``; ``campaign`` defaults to the manifest's stem."""
    campaign = (campaign if campaign is not None else result.source.stem).strip()
    if not campaign:
        raise ManifestError("campaign must not be empty")
    planned = [plan_document(doc, campaign) for doc in result.documents]
    return Plan(campaign=campaign, documents=planned, rejections=list(result.rejections), manifest=result.source)


#: The fields a planned document copies from its manifest document (``fields()`` once, not a row).
_MANIFEST_FIELDS = tuple(f.name for f in fields(ManifestDocument))


def plan_document(doc: ManifestDocument, campaign: str, profile: ServiceProfile | None = None) -> PlannedDocument:
    """One valid document planned: its mode, its key (:func:`text_key` when a file goes as its
    text) and its expected cost (the same words either way: doccheck's count of the text)."""
    mode = choose_mode(doc, profile)
    key = idempotency_key(campaign, doc.content_hash, doc.products)
    return PlannedDocument(
        **{name: getattr(doc, name) for name in _MANIFEST_FIELDS},
        mode=mode,
        idempotency_key=text_key(key) if mode == "text" and doc.path is not None else key,
        estimated_cost_cents=estimate_cost_cents(estimated_words(doc), doc.products),
    )


def run_defaults(
    products: str | Sequence[str] | None, metadata_columns: str | Sequence[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A run's default products (for rows without their own) and its metadata allowlist, parsed.

    Why one function: every reader of a manifest (:func:`load_plan`, the streamed plan, the
    recorded batches) takes them as a list or a comma string and used to parse them with its
    own copy of these lines. ``None`` products → ``["ai"]``; an unknown product raises
    :class:`~doccheck.sources.manifest.ManifestError` naming it.
    """
    try:
        defaults = parse_products(products, default=DEFAULT_PRODUCTS)
    except ValueError as exc:
        raise ManifestError(f"invalid --products: {exc}") from None
    if isinstance(metadata_columns, str):
        metadata_columns = [c for c in metadata_columns.split(",") if c.strip()]
    return tuple(defaults), tuple(metadata_columns)


def load_plan(
    manifest: str | os.PathLike[str],
    *,
    campaign: str | None = None,
    products: str | Sequence[str] | None = None,
    metadata_columns: str | Sequence[str] = (),
) -> Plan:
    """Read, validate and plan ``manifest`` in one call (what the flows and the CLI use).

    ``products`` is the run's default for rows without their own (``None`` → ``["ai"]``);
    it may be a list or a string such as ``"ai,similarity"``. Raises
    :class:`~doccheck.sources.manifest.ManifestError` for configuration errors.
    """
    defaults, allowlist = run_defaults(products, metadata_columns)
    result = read_manifest(manifest, default_products=defaults, metadata_columns=allowlist)
    return plan_documents(result, campaign)
