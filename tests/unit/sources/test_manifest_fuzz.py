"""Malformed manifests never crash: every input is either rows + rejections or one ManifestError."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doccheck.pipeline.planning._plan import plan_documents
from doccheck.sources.manifest import ManifestError, read_manifest

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

#: DOCCHECK_FUZZ_EXAMPLES=2000 for a longer search than the default run's.
FUZZ = settings(
    max_examples=int(os.environ.get("DOCCHECK_FUZZ_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


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


# --------------------------------------------------------------------------- hostile lines
# Values no database or service takes, numbers Python's json reads but JSON does not have,
# nesting around the bound, and raw bytes that are not UTF-8. Each line must end up as a
# document or a rejection of its own; only whole-file problems may raise ManifestError.

NASTY_CHARS = st.sampled_from(["\ud800", "\udfff", "\x00", "\u0301", "é", "\u2028", '"', "\\", "[", "{", ",", "\n"])
NASTY_TEXT = st.lists(st.one_of(NASTY_CHARS, st.text(max_size=4)), max_size=8).map("".join)
SCALAR = st.one_of(
    st.none(),
    NASTY_TEXT,
    st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
NESTED = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(NASTY_TEXT, inner, max_size=3)),
    max_leaves=8,
)
HOSTILE_KEYS = st.one_of(KEYS, st.sampled_from(["Document_ID", " path ", "TEXT", "section"]), NASTY_TEXT)
HOSTILE_ROW = st.dictionaries(HOSTILE_KEYS, st.one_of(CELL, NESTED), max_size=6)


def _dump(row: dict) -> bytes:
    return json.dumps(row, ensure_ascii=True).encode("ascii")  # surrogates as \\udXXX escapes, NaN as NaN


RAW_LINE = st.one_of(
    HOSTILE_ROW.map(_dump),
    st.integers(min_value=1, max_value=3000).map(
        lambda n: b'{"document_id": "d", "text": ' + b"[" * n + b"]" * n + b"}"
    ),
    st.integers(min_value=1, max_value=6000).map(
        lambda n: b'{"document_id": "n", "text": "w", "x": ' + b"9" * n + b"}"
    ),
    st.tuples(HOSTILE_ROW.map(_dump), st.binary(min_size=1, max_size=4), st.integers(min_value=0)).map(
        lambda t: t[0][: t[2] % (len(t[0]) + 1)] + t[1] + t[0][t[2] % (len(t[0]) + 1) :]
    ),
    st.binary(max_size=30),
)


def _nonblank_line_numbers(data: bytes) -> set[int]:
    numbers = set()
    for number, line in enumerate(data.split(b"\n"), start=1):
        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        try:
            blank = not line.decode("utf-8").strip()
        except UnicodeDecodeError:
            blank = False
        if not blank:
            numbers.add(number)
    return numbers


def _storable(result) -> None:
    for rejection in result.rejections:
        for value in (rejection.document_id or "", rejection.reason):
            value.encode("utf-8")
            assert "\x00" not in value
    for doc in result.documents:
        for value in (doc.document_id, doc.name, doc.text or "", *doc.metadata.values()):
            value.encode("utf-8")
            assert "\x00" not in value


@FUZZ
@given(st.lists(RAW_LINE, max_size=8))
def test_hostile_jsonl_lines_each_become_a_document_or_a_rejection(lines: list[bytes]) -> None:
    folder = _folder()
    try:
        path = folder / "m.jsonl"
        data = b"\n".join(line.replace(b"\n", b" ") for line in lines)
        path.write_bytes(data)
        started = time.process_time()  # the parse's own CPU: a loaded machine does not fail it
        try:
            result = read_manifest(path, metadata_columns=())
        except ManifestError as exc:
            # JSONL has no header: the only whole-file problem left is "no line has document_id".
            assert "document_id" in str(exc)
            return
        assert time.process_time() - started < 10
        numbers = [d.row_number for d in result.documents] + [r.row_number for r in result.rejections]
        assert sorted(numbers) == sorted(_nonblank_line_numbers(data))
        _storable(result)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# A CSV that is not UTF-8 is a whole-file error by design, so its cells keep to valid Unicode here.
CSV_CHARS = st.sampled_from(["\x00", "\u0301", "é", '"', ",", "\n", "\r", " "])
CSV_TEXT = st.lists(st.one_of(CSV_CHARS, st.text(max_size=4)), max_size=8).map("".join)
CSV_CELL = st.one_of(CSV_TEXT, st.sampled_from(['"', '""', '"open', 'close"', "a.txt", "ai", "x\r\ny", "", "d1", "d2"]))


@FUZZ
@given(st.lists(st.lists(CSV_CELL, min_size=1, max_size=5), max_size=8), st.sampled_from([",", ",", ",", ";"]))
def test_hostile_csv_rows_each_become_a_document_or_a_rejection(rows: list[list[str]], sep: str) -> None:
    folder = _folder()
    try:
        path = folder / "m.csv"
        body = "\n".join(sep.join(cells) for cells in [["document_id", "path", "text", "products"], *rows])
        path.write_text(body, encoding="utf-8", newline="")
        started = time.process_time()  # the parse's own CPU: a loaded machine does not fail it
        try:
            result = read_manifest(path, metadata_columns=())
        except ManifestError as exc:
            assert sep == ";" or "document_id" in str(exc) or "header" in str(exc), exc
            return
        assert time.process_time() - started < 10
        numbers = sorted([d.row_number for d in result.documents] + [r.row_number for r in result.rejections])
        assert numbers == list(range(1, len(numbers) + 1))  # every row once, none lost, none twice
        _storable(result)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


PARQUET_TEXT = st.lists(
    st.one_of(st.sampled_from(["\x00", "\u0301", "é", " ", "ai", "a.txt"]), st.text(max_size=4)), max_size=6
).map("".join)


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), PARQUET_TEXT),
            st.one_of(st.none(), PARQUET_TEXT),
            st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
            st.one_of(st.none(), st.binary(max_size=6)),
        ),
        max_size=8,
    )
)
def test_parquet_rows_each_become_a_document_or_a_rejection(rows: list[tuple]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = _folder()
    try:
        ids, texts, scores, blobs = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [])
        table = pa.table(
            {
                "document_id": pa.array(ids, pa.string()),
                "text": pa.array(texts, pa.string()),
                "score": pa.array(scores, pa.float64()),
                "blob": pa.array(blobs, pa.binary()),
            }
        )
        path = folder / "m.parquet"
        pq.write_table(table, path)
        result = read_manifest(path, metadata_columns=["score", "blob"])
        numbers = sorted([d.row_number for d in result.documents] + [r.row_number for r in result.rejections])
        assert numbers == list(range(1, len(rows) + 1))
        _storable(result)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
