"""Issue 41: a PDF whose reading crashes PDFium (the worker dies of SIGSEGV, not of a limit) is
read again with pypdf in a new worker, once; a file that is no PDF is not retried. The crash is
real: the workers start with a ``sitecustomize`` whose PDFium segfaults on any document. ~2 s."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from doccheck.extract import ExtractionError, count_words, extract_text, shutdown_workers
from tests import generated_documents as gen

pytestmark = pytest.mark.integration

CRASHING_PDFIUM = """
import os, signal
import pypdfium2

class _Crash:
    def __init__(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)

pypdfium2.PdfDocument = _Crash
"""


@pytest.fixture
def crashing_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    (tmp_path / "sitecustomize.py").write_text(CRASHING_PDFIUM)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p))
    shutdown_workers()  # the next workers start with the crashing PDFium
    yield
    monkeypatch.delenv("PYTHONPATH")
    shutdown_workers()  # later tests get the real one


def test_a_pdf_that_crashes_pdfium_is_read_with_pypdf(crashing_workers: None) -> None:
    essay = ["Rivers carry sediment from the mountains to the sea.", "Deltas form where the current slows down."]
    text = extract_text(gen.pdf_text(essay), "essay.pdf")
    assert count_words(text) == 16


def test_a_crash_on_a_file_that_is_no_pdf_is_not_retried(crashing_workers: None) -> None:
    pages_without_pdf_header = gen.pages(gen.pdf_text(["Some words here."]))  # PDFium reads its preview: crash
    with pytest.raises(ExtractionError, match="signal"):
        extract_text(pages_without_pdf_header, "essay.pages")
