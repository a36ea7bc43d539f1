"""Mutated real documents: the readers either return text or raise ExtractionError, nothing else.

In-process (``doccheck.extract._parse.parse``) so that hypothesis can run many cases fast; the worker adds only
process limits around the same code. A handful go through the worker at the end.
"""

from __future__ import annotations

import zipfile
from io import BytesIO
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doccheck.extract import DEFAULT_LIMITS, ExtractionError, extract_text
from doccheck.extract._parse import parse as _parse
from tests import generated_documents as gen

DOCUMENTS = Path(__file__).parents[2] / "data" / "documents"
SAMPLES = {
    name: (DOCUMENTS / name).read_bytes() for name in ("zen_of_python.docx", "crazyones.pdf", "readability-001.html")
}
#: The formats of issue 41, generated (``tests/generated_documents.py``).
_PARAGRAPHS = ["Mutated documents are read or refused with a reason.", "Nothing else: no other exception."]
SAMPLES.update({
    "essay.odt": gen.odt_paragraphs(_PARAGRAPHS),
    "essay.rtf": gen.rtf("\\par ".join(_PARAGRAPHS) + "{\\*\\annotation x}\\u8364?"),
    "essay.doc": gen.word97("\r".join(_PARAGRAPHS) + "\r", footnotes="Note.\r", unicode_from=20),
    "deck.pptx": gen.pptx([[p] for p in _PARAGRAPHS]),
})  # fmt: skip


def _document_xml_mutated(data: bytes, cut: int, junk: bytes) -> bytes:
    """Rebuild the zip with document.xml cut short and junk appended (still a valid zip)."""
    out = BytesIO()
    with zipfile.ZipFile(BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            body = src.read(item)
            if item.filename == "word/document.xml":
                body = body[: cut % (len(body) + 1)] + junk
            dst.writestr(item.filename, body)
    return out.getvalue()


def _flip(data: bytes, positions: list[int], value: int) -> bytes:
    buf = bytearray(data)
    for p in positions:
        buf[p % len(buf)] = value
    return bytes(buf)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(SAMPLES)),
    positions=st.lists(st.integers(min_value=0, max_value=10**7), min_size=1, max_size=8),
    value=st.integers(min_value=0, max_value=255),
)
def test_flipped_bytes(name: str, positions: list[int], value: int) -> None:
    data = _flip(SAMPLES[name], positions, value)
    try:
        assert isinstance(_parse(data, name, DEFAULT_LIMITS)[0], str)
    except ExtractionError as exc:
        assert str(exc)


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(min_value=0, max_value=10**6), junk=st.binary(max_size=64))
def test_damaged_document_xml(cut: int, junk: bytes) -> None:
    data = _document_xml_mutated(SAMPLES["zen_of_python.docx"], cut, junk)
    try:
        assert isinstance(_parse(data, "z.docx", DEFAULT_LIMITS)[0], str)
    except ExtractionError as exc:
        assert str(exc)


def test_a_few_through_the_worker() -> None:
    for i, name in enumerate(sorted(SAMPLES) * 3):
        data = _flip(SAMPLES[name], [i * 7919, i * 104729], i * 37 % 256)
        try:
            extract_text(data, name)
        except ExtractionError as exc:
            assert "worker" not in str(exc)  # the file's fault is named, the worker never died
