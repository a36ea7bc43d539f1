"""Hostile files in a manifest: each is its own row's rejection with a reason, in bounded time."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from doccheck.sources.manifest import RejectCode, read_manifest
from tests.hostile_documents import docx_bomb, docx_package, nested_tables, para, pdf_shared_stream

REAL = Path(__file__).parents[2] / "data" / "documents"


def test_hostile_rows_are_rejected_and_the_rest_accepted(tmp_path: Path) -> None:
    (tmp_path / "bomb.docx").write_bytes(docx_bomb(200 * 1024 * 1024))
    (tmp_path / "shared.pdf").write_bytes(pdf_shared_stream(40, 8 * 1024 * 1024))
    (tmp_path / "deep.docx").write_bytes(docx_package(nested_tables(200)))
    (tmp_path / "table.docx").write_bytes(docx_package(nested_tables(2, "words only in a table")))
    (tmp_path / "fine.docx").write_bytes(docx_package(para("A fine essay of seven words.")))
    shutil.copy(REAL / "weekly_schedule.docx", tmp_path / "weekly.docx")
    manifest = tmp_path / "m.csv"
    manifest.write_text(
        "document_id,path\nb,bomb.docx\ns,shared.pdf\nd,deep.docx\nt,table.docx\nf,fine.docx\nw,weekly.docx\n",
        encoding="utf-8",
    )
    started = time.monotonic()
    result = read_manifest(manifest)
    elapsed = time.monotonic() - started
    reasons = {r.document_id: r.reason for r in result.rejections}
    assert {r.code for r in result.rejections} == {RejectCode.UNREADABLE_FILE}
    assert reasons == {
        "b": "row 1 (document_id 'b'): path: 'bomb.docx': document.xml inflates past 50 MiB",
        "s": "row 2 (document_id 's'): path: 'shared.pdf': the PDF's page content passes 32 MiB at page 5 "
        "(a stream shared by pages counts for each)",
        "d": "row 3 (document_id 'd'): path: 'deep.docx': document.xml is nested over 256 levels deep",
    }
    assert {d.document_id: d.words for d in result.documents} == {"t": 5, "f": 6, "w": 537}
    assert elapsed < 30  # about 3 s here; the dry run took 3 min 14 s and 3.2 GB
