"""One row → one :class:`ManifestDocument` or one :class:`Rejection`; the first failing rule wins.

Everything the service, the ledger or the report writer would refuse later is refused here,
so a dry run that passes a row means the real run can send and record it: a NUL or a lone
surrogate in any value that is used (id, name, path, text, products, allowlisted metadata),
an id, name or metadata over the service's sizes, a text whose request body is over the
service's limit, and ids that are the same once Unicode-normalised (NFC).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path

from doccheck.errors import CellProblem
from doccheck.extract import count_words
from doccheck.sources.manifest._files import check_file
from doccheck.sources.manifest._limits import (
    JSON_BODY_MAX_BYTES,
    JSON_BODY_RESERVE_BYTES,
    MAX_ID_CHARS,
    MAX_METADATA_CHARS,
    MAX_NAME_CHARS,
)
from doccheck.sources.manifest._products import parse_products
from doccheck.sources.manifest._types import ManifestDocument, RejectCode, Rejection, Row, RowProblem
from doccheck.sources.manifest._values import show, unsafe_text
from doccheck.storage import Listing, UserPath

__all__ = ["validate_row"]

_CODE_FOR_UNSAFE = {"text": RejectCode.INVALID_TEXT, "path": RejectCode.INVALID_PATH}


def validate_row(
    row_number: int,
    row: Row | RowProblem,
    base_dir: UserPath,
    defaults: tuple[str, ...],
    allowlist: list[str],
    seen_ids: dict[str, tuple[int, str]],
    listing: Listing | None = None,
) -> ManifestDocument | Rejection:
    """Validate one row; ``seen_ids`` (NFC id → first row and its spelling) is updated for duplicates.

    ``base_dir``: the manifest's folder or prefix, ``listing`` its listing (``check_file``)."""
    document_id: str | None = None
    shown_id: str | None = None  # the id as the reason shows it, escaped
    try:
        if isinstance(row, RowProblem):
            document_id = _storable_id(row.document_id)
            shown_id = document_id
            if document_id is not None:
                seen_ids.setdefault(_id_key(document_id), (row_number, document_id))
            raise CellProblem(row.field, row.code, row.why)
        raw_id = row.get("document_id")
        candidate = raw_id.strip() if raw_id is not None else None
        if not candidate:
            raise CellProblem("document_id", RejectCode.MISSING_ID, "empty or missing")
        shown_id = candidate
        problem = unsafe_text(candidate)
        if problem is not None:
            raise CellProblem("document_id", RejectCode.INVALID_VALUE, problem)
        if len(candidate) > MAX_ID_CHARS:
            raise CellProblem(
                "document_id", RejectCode.VALUE_TOO_LONG, f"{len(candidate):,} characters, over {MAX_ID_CHARS}"
            )
        document_id = candidate
        key = _id_key(document_id)
        if key in seen_ids:
            first_row, spelling = seen_ids[key]
            raise CellProblem(
                "document_id",
                RejectCode.DUPLICATE_ID,
                f"{show(document_id)} is already used by row {first_row}"
                + (
                    ""
                    if spelling == document_id
                    else f" as {show(spelling)}, the same id once Unicode-normalised (NFC)"
                ),
            )
        seen_ids[key] = (row_number, document_id)
        _check_values(row, allowlist)
        return _document(row_number, row, document_id, (base_dir, listing), defaults, allowlist)
    except CellProblem as rej:
        who = f"row {row_number}" + (f" (document_id {show(shown_id)})" if shown_id else "")
        field = _storable_field(rej.field)
        return Rejection(
            row_number=row_number,
            document_id=document_id,
            field=field,
            code=rej.code,
            reason=f"{who}: {field}: {rej.why}",
        )


def _document(
    row_number: int,
    row: Row,
    document_id: str,
    files: tuple[UserPath, Listing | None],
    defaults: tuple[str, ...],
    allowlist: list[str],
) -> ManifestDocument:
    try:
        products = parse_products(row.get("products"), defaults)
    except ValueError as exc:
        raise CellProblem("products", RejectCode.INVALID_PRODUCTS, str(exc)) from None
    name = (row.get("name") or "").strip()
    metadata = {"document_id": document_id}
    for column in allowlist:
        metadata[column] = row.get(column) or ""
    metadata_chars = _json_chars(metadata)
    if metadata_chars > MAX_METADATA_CHARS:
        raise CellProblem(
            "metadata",
            RejectCode.VALUE_TOO_LONG,
            f"the metadata sent ({', '.join(metadata)}) is {metadata_chars:,} characters as JSON, "
            f"over the service's {MAX_METADATA_CHARS:,}",
        )
    raw_path = row.get("path")
    raw_path = raw_path.strip() if raw_path is not None else None
    text = row.get("text")
    if raw_path and text:
        raise CellProblem("path", RejectCode.BOTH_PATH_AND_TEXT, "both 'path' and 'text' are given; give exactly one")
    if raw_path:
        resolved, size, digest, words, read_as = check_file(raw_path, *files)
        name = name or Path(raw_path).name
        _check_name(name)
        return ManifestDocument(
            row_number=row_number,
            document_id=document_id,
            name=name,
            products=products,
            text=None,
            path=resolved,
            size_bytes=size,
            content_hash=digest,
            words=words,
            metadata=metadata,
            read_as=read_as,
        )
    if text is None:
        raise CellProblem("path", RejectCode.NO_PATH_OR_TEXT, "neither 'path' nor 'text' is given; give exactly one")
    if not text.strip():
        raise CellProblem("text", RejectCode.EMPTY_DOCUMENT, "the text is empty or only whitespace")
    name = name or document_id
    _check_name(name)
    data = text.encode("utf-8")  # unsafe_text ruled out lone surrogates
    body = _json_body_bytes(text, products, name, metadata)
    if body + JSON_BODY_RESERVE_BYTES > JSON_BODY_MAX_BYTES:
        raise CellProblem(
            "text",
            RejectCode.TEXT_TOO_LARGE,
            f"the request for this text would be {body:,} bytes, over the service's {JSON_BODY_MAX_BYTES:,} "
            "byte limit for a JSON body; save it as a .txt file and give its 'path' instead (files go up to 50 MiB)",
        )
    words = count_words(text)
    if words == 0:
        raise CellProblem("text", RejectCode.EMPTY_DOCUMENT, "the text has no words (only punctuation or symbols)")
    return ManifestDocument(
        row_number=row_number,
        document_id=document_id,
        name=name,
        products=products,
        text=text,
        path=None,
        size_bytes=len(data),
        content_hash=hashlib.sha256(data).hexdigest(),
        words=words,
        metadata=metadata,
    )


def _json_body_bytes(text: str, products: tuple[str, ...], name: str, metadata: dict[str, str]) -> int:
    """Bytes of the JSON body the client sends for a text row (httpx: compact, ensure_ascii=False).

    Exact only when it could matter: below the limit an upper bound is returned without
    encoding (no character takes more than 12 bytes of JSON), which saves a second encoding
    of every ordinary text.
    """
    bound = _json_bound(text, name, *products, *metadata, *metadata.values())
    if bound + JSON_BODY_RESERVE_BYTES <= JSON_BODY_MAX_BYTES:
        return bound
    body = json.dumps(
        {"text": text, "products": list(products), "name": name, "metadata": metadata},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return len(body.encode("utf-8"))


def _json_chars(metadata: dict[str, str]) -> int:
    """``len(json.dumps(metadata))`` as the service measures it; an upper bound when far below the limit."""
    bound = _json_bound(*metadata, *metadata.values())
    return bound if bound <= MAX_METADATA_CHARS else len(json.dumps(metadata))


def _json_bound(*strings: str) -> int:
    """No character takes more than 12 characters/bytes of JSON (an escaped surrogate pair), plus quotes and separators."""
    return 12 * sum(map(len, strings)) + 4 * len(strings) + 16


def _check_values(row: Row, allowlist: list[str]) -> None:
    """A NUL or lone surrogate in any value that is sent or stored rejects the row, naming the field."""
    for column in ("path", "text", "name", "products", *allowlist):
        value = row.get(column)
        if value is None:
            continue
        problem = unsafe_text(value)
        if problem is not None:
            if column == "path" and "surrogate" in problem:
                problem += "; a file name that is not valid UTF-8 cannot be sent: rename the file"
            raise CellProblem(column, _CODE_FOR_UNSAFE.get(column, RejectCode.INVALID_VALUE), problem)


def _check_name(name: str) -> None:
    if len(name) > MAX_NAME_CHARS:
        raise CellProblem(
            "name", RejectCode.VALUE_TOO_LONG, f"{len(name):,} characters, over the service's {MAX_NAME_CHARS}"
        )


def _id_key(document_id: str) -> str:
    """Ids that differ only in Unicode normalisation look the same to people: one key for both."""
    return unicodedata.normalize("NFC", document_id)


def _storable_field(column: str) -> str:
    """A column name as a rejection keeps it: as written when safe, else escaped (JSONL keys are free text)."""
    if unsafe_text(column) is None and len(column) <= 100 and column.isprintable():
        return column
    return show(column)


def _storable_id(value: str | None) -> str | None:
    """A reader's id kept on a rejection only when the ledger and reports can store it."""
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > MAX_ID_CHARS or unsafe_text(value) is not None:
        return None
    return value
