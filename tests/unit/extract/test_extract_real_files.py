"""Real files from other projects' corpora: DOCX, PDF and HTML match independent word counts;
DOC, ODT, RTF and PPTX match the text they are known to hold.

See tests/data/documents/README.md for the sources, licences, references and tolerance.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import docx
import pytest

from doccheck.extract import ImageOnlyPdf, count_words, extract_text

DOCUMENTS = Path(__file__).parents[2] / "data" / "documents"
KNOWN_TEXT = DOCUMENTS / "textract"
EXPECTED = json.loads((DOCUMENTS / "expected.json").read_text(encoding="utf-8"))["documents"]


def _tolerance(words: int) -> int:
    return max(2, words * 2 // 100)


@pytest.mark.parametrize("entry", EXPECTED, ids=[e["file"] for e in EXPECTED])
def test_real_file_word_count(entry: dict[str, object]) -> None:
    words = int(entry["words"])  # type: ignore[call-overload]
    if words == 0 and str(entry["file"]).endswith(".pdf"):  # git.pdf: one image, no text layer
        with pytest.raises(ImageOnlyPdf, match="image-only PDF"):
            extract_text((DOCUMENTS / str(entry["file"])).read_bytes(), str(entry["file"]))
        return
    ours = count_words(extract_text((DOCUMENTS / str(entry["file"])).read_bytes(), str(entry["file"])))
    assert abs(ours - words) <= _tolerance(words), f"{entry['file']}: {ours} words, reference {words}"


def test_every_type_is_covered() -> None:
    kinds = {Path(e["file"]).suffix for e in EXPECTED}
    assert kinds == {".docx", ".pdf", ".html"}
    assert sorted(p.name for p in DOCUMENTS.iterdir() if p.suffix in kinds) == sorted(e["file"] for e in EXPECTED)


def test_the_old_python_docx_traversal_was_outside_the_tolerance() -> None:
    """The regression this corpus guards: merged cells repeated per spanned column."""
    entry = next(e for e in EXPECTED if e["file"] == "weekly_schedule.docx")
    document = docx.Document(io.BytesIO((DOCUMENTS / "weekly_schedule.docx").read_bytes()))
    parts = [p.text for p in document.paragraphs]
    parts += [cell.text for table in document.tables for row in table.rows for cell in row.cells]
    legacy = count_words("\n".join(parts))
    assert legacy - entry["words"] > _tolerance(entry["words"])


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


@pytest.mark.parametrize("kind", ["doc", "odt", "rtf", "pptx"])
def test_real_file_reads_its_known_text(kind: str) -> None:
    """The same words in the same order as the text the file is known to hold (textract's)."""
    path = KNOWN_TEXT / f"raw_text.{kind}"
    known = (KNOWN_TEXT / f"raw_text.{kind}.txt").read_text(encoding="utf-8")
    text = extract_text(path.read_bytes(), path.name)
    assert _words(text) == _words(known)
    assert count_words(text) == count_words(known)
