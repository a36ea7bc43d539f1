"""Issue 41 after issue 38: the extractor's limits are fields of the one settings model
(``DOCCHECK_EXTRACT_*``): what the operator set is what every read uses; a bad value is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from doccheck.config import load_settings
from doccheck.errors import SettingsError
from doccheck.extract import DEFAULT_LIMITS, ExtractionLimitExceeded, extract_text
from doccheck.extract._read_limits import MiB, limits_in_force
from doccheck.sources.manifest import read_manifest
from tests import generated_documents as gen

VARIABLES = ("WALL_SECONDS", "CPU_SECONDS", "MEMORY_MB", "MAX_PDF_PAGES", "MAX_SLIDES", "MAX_INFLATED_MB")


@pytest.fixture(autouse=True)
def _unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(f"DOCCHECK_EXTRACT_{name}", raising=False)


def test_unset_the_limits_are_the_defaults_and_a_set_one_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    assert limits_in_force() == DEFAULT_LIMITS
    monkeypatch.setenv("DOCCHECK_EXTRACT_MAX_SLIDES", "2")
    monkeypatch.setenv("DOCCHECK_EXTRACT_MEMORY_MB", "256")
    limits = limits_in_force()
    assert (limits.max_slides, limits.memory_bytes) == (2, 256 * MiB)
    with pytest.raises(ExtractionLimitExceeded, match="slides"):
        extract_text(gen.pptx([["one"], ["two"], ["three"]]), "deck.pptx")


def test_a_manifest_row_past_a_set_limit_is_rejected_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_EXTRACT_MAX_PDF_PAGES", "1")
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for words in ("Page one words.", "Page two words."):
        pdf.add_page()
        pdf.multi_cell(0, 6, words)
    (tmp_path / "two.pdf").write_bytes(bytes(pdf.output()))
    (tmp_path / "m.csv").write_text("document_id,path\na,two.pdf\n")
    result = read_manifest(tmp_path / "m.csv")
    assert not result.documents and "page" in result.rejections[0].reason


def test_a_bad_limit_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_EXTRACT_WALL_SECONDS", "0")
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert raised.value.lines[0].startswith("DOCCHECK_EXTRACT_WALL_SECONDS='0' (environment): ")
