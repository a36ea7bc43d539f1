"""Issue 41: a file sent as its text: read by the same bounded extractor at send time, refused
before sending when its text is over the service's JSON limit, and a batch re-read keeps the
way the run recorded it (the text key once the service refused the file's type)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from doccheck.client import DocCheckError
from doccheck.domain import text_key
from doccheck.pipeline.planning import _batches as batches
from doccheck.pipeline.planning._plan import as_text, load_plan
from doccheck.pipeline.sending import _requests as requests
from tests import generated_documents as gen

ESSAY = ["Rivers carry sediment from the mountains to the sea.", "Deltas form where the current slows down."]


def test_the_text_of_a_file_is_what_the_extractor_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "essay.odt"
    path.write_bytes(gen.odt_paragraphs(ESSAY))
    doc = SimpleNamespace(path=path, name="essay.odt")
    assert asyncio.run(requests.text_of_file(doc)).split() == " ".join(ESSAY).split()
    monkeypatch.setattr(requests, "JSON_BODY_MAX_BYTES", 1024)
    with pytest.raises(DocCheckError) as refused:
        asyncio.run(requests.text_of_file(doc))
    assert refused.value.code == "text_too_large" and "not sent" in refused.value.message


def test_a_batch_re_read_keeps_the_mode_and_key_the_run_recorded(tmp_path: Path) -> None:
    (tmp_path / "essay.odt").write_bytes(gen.odt_paragraphs(ESSAY))
    (tmp_path / "m.csv").write_text("document_id,path\na,essay.odt\n")
    planned = load_plan(tmp_path / "m.csv", campaign="c").documents[0]
    assert planned.mode == "multipart"
    recorded = {"idempotency_key": text_key(planned.idempotency_key), "mode": "text"}
    assert batches._as_recorded(planned, recorded) == as_text(planned)  # the service refused it: its text
    back = batches._as_recorded(as_text(planned), {"idempotency_key": planned.idempotency_key, "mode": "multipart"})
    assert back == planned  # recorded as the file: sent as the file (a 415 moves it, not the re-read)
    other = replace(planned, idempotency_key="dc1-other")
    assert batches._as_recorded(other, recorded) == other  # another document: not this run's key
