"""Crafted hostile manifest lines, generated here (nothing committed), shared by unit and integration tests.

Each entry is (document_id as the rejection keeps it, expected code, expected field, raw JSONL
line bytes). The good rows are ordinary text rows.
"""

from __future__ import annotations

import json

ESSAY = "Rivers shape the cities that grow beside them, and floods remind us. " * 6


def good_line(document_id: str, text: str = ESSAY) -> bytes:
    return json.dumps({"document_id": document_id, "text": text}).encode("utf-8")


def hostile_lines() -> list[tuple[str | None, str, str, bytes]]:
    """One line per hostile case; the id is what :class:`Rejection.document_id` should hold."""
    deep = b'{"document_id": "deep", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    return [
        ("deep", "invalid_row", "row", deep),
        (
            "bignum",
            "invalid_value",
            "score",
            b'{"document_id": "bignum", "text": "w w", "score": ' + b"7" * 5000 + b"}",
        ),
        (None, "invalid_value", "document_id", b'{"document_id": "s\\ud800", "text": "some words"}'),
        ("surrogate-path", "invalid_path", "path", b'{"document_id": "surrogate-path", "path": "essay\\udc80.txt"}'),
        ("surrogate-text", "invalid_text", "text", b'{"document_id": "surrogate-text", "text": "half \\udfff a pair"}'),
        (
            "surrogate-name",
            "invalid_value",
            "name",
            b'{"document_id": "surrogate-name", "text": "w w", "name": "\\ud83d"}',
        ),
        ("nul-text", "invalid_text", "text", b'{"document_id": "nul-text", "text": "a\\u0000b"}'),
        ("nan", "invalid_value", "score", b'{"document_id": "nan", "text": "w w", "score": NaN}'),
        ("inf", "invalid_value", "score", b'{"document_id": "inf", "text": "w w", "score": 1e400}'),
        ("bad-utf8", "invalid_row", "row", b'{"document_id": "bad-utf8", "text": "caf\xe9 cr\xe8me"}'),
    ]


def hostile_jsonl(good_ids: tuple[str, ...] = ("good-1", "good-2")) -> bytes:
    """Good rows first and last (different texts: one check each), every hostile line between them."""
    first, *rest = (good_line(i, f"{ESSAY} ({i})") for i in good_ids)
    lines = [first, *(line for *_, line in hostile_lines()), *rest]
    return b"\n".join(lines) + b"\n"
