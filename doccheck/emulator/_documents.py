"""Turning a create-check input (text, multipart file or upload) into a document.

Where the three input kinds converge: each yields the original bytes, a file name and
content type for ``files.original``, and the extracted text whose words are billed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from doccheck.emulator import _ai_heuristic as ai_heuristic
from doccheck.emulator._api_errors import ApiError, invalid_input
from doccheck.emulator._similarity import ShingleIndex, compare_hashes, shingle_hashes
from doccheck.emulator._store import Account, Upload
from doccheck.extract import (
    ExtractionError,
    ExtractionStopped,
    UnsupportedFileType,
    content_type_for,
    count_words,
    extract_text,
    words_of,
)


@dataclass
class Document:
    original: bytes
    filename: str
    content_type: str
    text: str
    words: int
    upload: Upload | None = None
    hashes: list[int] = field(default_factory=list)
    shingled_words: int = 0  # words the hashes were made from
    results: dict[str, dict[str, Any]] = field(default_factory=dict)


def analyse(doc: Document, products: list[str]) -> None:
    """Shingle the text and compute the AI result now, off the event loop (the slow part).

    Results are revealed when each product finishes. Similarity is compared by
    :func:`compare_similarity` when the check is stored, not here: two checks analysed at
    once would each miss the other (neither indexed yet), so a near-duplicate pair sent
    concurrently was found or not by the threads' timing.
    """
    words = words_of(doc.text)
    doc.hashes = shingle_hashes(words)
    doc.shingled_words = len(words)
    if "ai" in products:
        verdict = ai_heuristic.score_text(doc.text)
        doc.results["ai"] = {"status": "completed", "score": verdict.score, "label": verdict.label,
                             "method": ai_heuristic.METHOD}  # fmt: skip


def compare_similarity(
    doc: Document, products: list[str], indexes: list[ShingleIndex], seq: int, check_id: str
) -> None:
    """The similarity result against every submission stored before this one (creation order
    ``seq``, given as the check is stored: the answer the completion time would give)."""
    if "similarity" in products:
        found = compare_hashes(doc.hashes, doc.shingled_words, indexes, exclude=check_id, before_seq=seq)
        doc.results["similarity"] = {"status": "completed", **found}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _extract(data: bytes, filename: str) -> str:
    try:
        return extract_text(data, filename)
    except UnsupportedFileType as exc:
        raise ApiError(415, "unsupported_file_type", str(exc)) from None
    except ExtractionStopped:  # SIGTERM killed the worker: not the document's fault, retryable
        raise ApiError(503, "service_unavailable", "the service is shutting down; retry later") from None
    except ExtractionError as exc:
        raise invalid_input(f"the file could not be read: {exc}") from None


def _with_words(doc: Document) -> Document:
    if doc.words == 0:
        raise invalid_input("the document contains no words")
    return doc


def from_text(text: str) -> Document:
    text_bytes = text.encode("utf-8", "surrogatepass")
    return _with_words(Document(text_bytes, "text.txt", "text/plain; charset=utf-8", text, count_words(text)))


def from_file(data: bytes, filename: str) -> Document:
    if not filename:
        raise invalid_input("field 'file' has no filename; the extension decides the document type")
    text = _extract(data, filename)
    ctype = content_type_for(filename) or "application/octet-stream"
    return _with_words(Document(data, filename, ctype, text, count_words(text)))


def upload_of(account: Account, upload_id: str) -> Upload:
    """The caller's usable upload, or 404/409 as DESIGN.md says."""
    upload = account.uploads.get(upload_id)
    if upload is None or upload.status == "deleted":
        raise ApiError(404, "upload_not_found", "no such upload (unknown, or deleted after 24 hours unused)")
    if upload.status == "consumed":
        raise ApiError(409, "upload_consumed", "this upload_id was already used for a check")
    if upload.data is None:
        raise ApiError(409, "upload_incomplete", "the file bytes were never PUT to the upload_url")
    return upload


def from_upload(upload: Upload, data: bytes) -> Document:
    """The document from an upload's bytes as stored when the request arrived."""
    text = _extract(data, upload.filename)
    doc = Document(data, upload.filename, upload.content_type, text, count_words(text), upload)
    return _with_words(doc)
