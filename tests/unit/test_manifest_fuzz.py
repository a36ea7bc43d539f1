"""Malformed manifests never crash: every input is either rows + rejections or one ManifestError."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doccheck.manifest import ManifestError, read_manifest
from doccheck.planning import plan_documents

CELL = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.sampled_from(["ai", "similarity", "ai;similarity", "x|ai", "../x.txt", "/etc/passwd", "a.txt", "a.png", " "]),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.lists(st.text(max_size=5), max_size=3),
)
KEYS = st.sampled_from(["document_id", "path", "text", "name", "products", "section"])
ROW = st.dictionaries(KEYS, CELL, max_size=6)

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="doccheck-fuzz-"))
    (folder / "a.txt").write_text("a small essay of several words", encoding="utf-8")
    (folder / "a.png").write_bytes(b"\x89PNG")
    return folder


def _check(path: Path) -> None:
    try:
        _check_in(path)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


def _check_in(path: Path) -> None:
    try:
        result = read_manifest(path, metadata_columns=())
    except ManifestError as exc:
        assert str(path) in str(exc) or "manifest" in str(exc)
        return
    plan = plan_documents(result, campaign="fuzz")
    ids = [d.document_id for d in plan.documents]
    assert len(ids) == len(set(ids))
    for rejection in result.rejections:
        assert rejection.reason.startswith(f"row {rejection.row_number}")


@FUZZ
@given(st.lists(st.one_of(ROW.map(json.dumps), st.text(max_size=20)), max_size=8))
def test_jsonl_never_crashes(lines: list[str]) -> None:
    folder = _folder()
    path = folder / "m.jsonl"
    path.write_text("\n".join(line.replace("\n", " ") for line in lines), encoding="utf-8", errors="surrogatepass")
    _check(path)


@FUZZ
@given(st.binary(max_size=300))
def test_csv_bytes_never_crash(data: bytes) -> None:
    folder = _folder()
    path = folder / "m.csv"
    path.write_bytes(b"document_id,path,text,products\n" + data)
    _check(path)


@FUZZ
@given(st.text(max_size=300))
def test_csv_text_never_crashes(body: str) -> None:
    folder = _folder()
    path = folder / "m.csv"
    path.write_text(body, encoding="utf-8", errors="surrogatepass")
    _check(path)
