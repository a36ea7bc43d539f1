"""Broken and hostile manifests: one bad row never sinks the batch, every parse is bounded.

Every input is crafted here. Each case checks the row number, the field and the code of the
rejection, that the good rows around it stay documents, and that what a rejection keeps can
be stored (UTF-8 encodable, no NUL).
"""

from __future__ import annotations

import json
import time
import unicodedata
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from doccheck.sources.manifest import ManifestError, RejectCode, Rejection, read_manifest
from doccheck.sources.manifest import _csv_reader as csv_reader
from doccheck.sources.manifest import _jsonl_reader as jsonl_reader
from doccheck.sources.manifest import _limits as limits
from tests.unit.hostile_manifests import ESSAY, good_line, hostile_jsonl, hostile_lines


def storable(rejection: Rejection) -> None:
    """What the ledger and reports receive: encodable, no NUL, the reason names the row."""
    for value in (rejection.document_id or "", rejection.reason, rejection.field, rejection.code):
        value.encode("utf-8")
        assert "\x00" not in value
    assert rejection.reason.startswith(f"row {rejection.row_number}")


def rejections_by_row(result) -> dict[int, Rejection]:
    for r in result.rejections:
        storable(r)
    return {r.row_number: r for r in result.rejections}


# --------------------------------------------------------------------------- JSONL


def test_each_hostile_jsonl_line_rejects_only_its_row(tmp_path: Path) -> None:
    m = tmp_path / "m.jsonl"
    m.write_bytes(hostile_jsonl())
    started = time.process_time()  # the parse's own CPU: a loaded machine does not fail it
    result = read_manifest(m)
    assert time.process_time() - started < 5
    cases = hostile_lines()
    assert [(d.document_id, d.row_number) for d in result.documents] == [("good-1", 1), ("good-2", len(cases) + 2)]
    got = rejections_by_row(result)
    assert sorted(got) == list(range(2, len(cases) + 2))
    for line_number, (document_id, code, field, _) in enumerate(cases, start=2):
        rejection = got[line_number]
        assert (rejection.document_id, rejection.code, rejection.field) == (document_id, code, field), rejection


def test_jsonl_rejection_reasons_say_why(tmp_path: Path) -> None:
    m = tmp_path / "m.jsonl"
    m.write_bytes(hostile_jsonl())
    reasons = {r.row_number: r.reason for r in read_manifest(m).rejections}
    assert "deeper than 32 levels" in reasons[2]
    assert "a number of 5000 characters" in reasons[3]
    assert "lone surrogate (U+D800" in reasons[4] and "'s\\ud800'" in reasons[4]  # the id, escaped
    assert "rename the file" in reasons[5]
    assert "NUL character at character 2" in reasons[8]
    assert "NaN is not a finite number" in reasons[9]
    assert "'1e400' is not a finite number" in reasons[10]
    assert "not valid UTF-8 (byte 0xE9" in reasons[11] and "save the manifest as UTF-8" in reasons[11]


def test_jsonl_deep_line_is_bounded_in_time(tmp_path: Path) -> None:
    # Two million brackets in one line, and a line mixing strings full of brackets.
    deep = b'{"document_id": "d", "text": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}"
    brackets_in_text = json.dumps({"document_id": "t", "text": "[" * 200_000 + " words here"}).encode()
    m = tmp_path / "m.jsonl"
    m.write_bytes(deep + b"\n" + brackets_in_text + b"\n")
    started = time.process_time()  # the parse's own CPU: a loaded machine does not fail it
    result = read_manifest(m)
    assert time.process_time() - started < 5
    assert [d.document_id for d in result.documents] == ["t"]  # brackets inside a string are text
    assert [(r.row_number, r.code) for r in result.rejections] == [(1, RejectCode.INVALID_ROW)]


def test_jsonl_nesting_within_the_bound_is_kept_as_json_text(tmp_path: Path) -> None:
    nested = {"document_id": "n", "text": "w w", "extra": [[[{"k": [1.50, 2]}]]]}
    m = tmp_path / "m.jsonl"
    m.write_text(json.dumps(nested).replace("1.5", "1.50"), encoding="utf-8")
    result = read_manifest(m, metadata_columns=["extra"])
    (doc,) = result.documents
    assert json.loads(doc.metadata["extra"]) == [[[{"k": [1.5, 2]}]]]


def test_jsonl_over_long_line_is_skipped_without_being_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl_reader, "MAX_LINE_BYTES", 1000)
    long_line = json.dumps({"document_id": "long", "text": "word " * 5000}).encode()
    m = tmp_path / "m.jsonl"
    m.write_bytes(good_line("a", "short words") + b"\n" + long_line + b"\n" + good_line("b", "more words") + b"\n")
    result = read_manifest(m)
    assert [(d.document_id, d.row_number) for d in result.documents] == [("a", 1), ("b", 3)]
    (rejection,) = result.rejections
    assert (rejection.row_number, rejection.code) == (2, RejectCode.INVALID_ROW)
    assert "longer than 1,000 bytes" in rejection.reason


def test_jsonl_numbers_keep_their_written_form(tmp_path: Path) -> None:
    m = tmp_path / "m.jsonl"
    m.write_text(
        '{"document_id": 1.50, "text": "w w", "grade": 12.0}\n'
        '{"document_id": 1.5, "text": "x x"}\n'
        '{"document_id": 12, "text": "y y", "grade": -0.5e3}\n',
        encoding="utf-8",
    )
    result = read_manifest(m, metadata_columns=["grade"])
    assert [(d.document_id, d.metadata["grade"]) for d in result.documents] == [
        ("1.50", "12.0"),
        ("1.5", ""),
        ("12", "-0.5e3"),
    ]


def test_jsonl_duplicate_and_case_colliding_keys(tmp_path: Path) -> None:
    m = tmp_path / "m.jsonl"
    m.write_text(
        '{"document_id": "a", "text": "w w", "text": "other"}\n'
        '{"document_id": "b", "Text": "w w", "text": "x"}\n'
        '{"Document_ID": "c", "TEXT": "capital keys are the reserved columns"}\n',
        encoding="utf-8",
    )
    result = read_manifest(m)
    assert [d.document_id for d in result.documents] == ["c"]
    got = rejections_by_row(result)
    assert "'text' appears more than once" in got[1].reason and got[1].document_id == "a"
    assert "letter case differs" in got[2].reason


def test_jsonl_file_of_only_bad_lines_is_rows_not_a_missing_column(tmp_path: Path) -> None:
    m = tmp_path / "m.jsonl"
    m.write_bytes(b"[" * 50 + b"\n" + b"\xff\xfe\n")
    result = read_manifest(m)
    assert result.documents == [] and [r.row_number for r in result.rejections] == [1, 2]


# --------------------------------------------------------------------------- values


def test_nul_and_surrogates_anywhere_that_is_sent(tmp_path: Path) -> None:
    (tmp_path / "essay.txt").write_text(ESSAY, encoding="utf-8")
    rows = [
        {"document_id": "ok", "path": "essay.txt", "section": "A"},
        {"document_id": "meta-nul", "text": "w w", "section": "A\u0000"},
        {"document_id": "meta-sur", "text": "w w", "section": "\udc00"},
        {"document_id": "products-nul", "text": "w w", "products": "ai\u0000"},
        {"document_id": "path-nul", "path": "essay.txt\u0000"},
        {"document_id": "unsent", "text": "w w", "student_email": "\ud800 not sent, not checked"},
    ]
    m = tmp_path / "m.jsonl"
    m.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    result = read_manifest(m, metadata_columns=["section"])
    assert [d.document_id for d in result.documents] == ["ok", "unsent"]
    got = {r.document_id: (r.field, r.code) for r in result.rejections}
    assert got == {
        "meta-nul": ("section", RejectCode.INVALID_VALUE),
        "meta-sur": ("section", RejectCode.INVALID_VALUE),
        "products-nul": ("products", RejectCode.INVALID_VALUE),
        "path-nul": ("path", RejectCode.INVALID_PATH),
    }
    rejections_by_row(result)


def test_ids_equal_once_normalised_are_duplicates(tmp_path: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "café")
    m = tmp_path / "m.jsonl"
    m.write_text(
        "\n".join(json.dumps({"document_id": i, "text": "w w"}) for i in (decomposed, "café", "cafe")), encoding="utf-8"
    )
    result = read_manifest(m)
    assert [d.document_id for d in result.documents] == [decomposed, "cafe"]
    (dup,) = result.rejections
    assert dup.code == RejectCode.DUPLICATE_ID and dup.row_number == 2
    assert "row 1" in dup.reason and "Unicode-normalised (NFC)" in dup.reason


def test_values_over_the_service_limits(tmp_path: Path) -> None:
    rows = [
        {"document_id": "x" * (limits.MAX_ID_CHARS + 1), "text": "w w"},
        {"document_id": "long-name", "text": "w w", "name": "n" * (limits.MAX_NAME_CHARS + 1)},
        {"document_id": "max-name", "text": "w w", "name": "n" * limits.MAX_NAME_CHARS},
        {"document_id": "big-meta", "text": "w w", "section": "s" * limits.MAX_METADATA_CHARS},
        {"document_id": "big-text", "text": "word " * (limits.JSON_BODY_MAX_BYTES // 5)},
        {"document_id": "escaped-text", "text": "\u0001" * (limits.JSON_BODY_MAX_BYTES // 6 + 1) + " w"},
    ]
    m = tmp_path / "m.jsonl"
    m.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    result = read_manifest(m, metadata_columns=["section"])
    assert [d.document_id for d in result.documents] == ["max-name"]
    got = {r.row_number: (r.field, r.code) for r in result.rejections}
    assert got == {
        1: ("document_id", RejectCode.VALUE_TOO_LONG),
        2: ("name", RejectCode.VALUE_TOO_LONG),
        4: ("metadata", RejectCode.VALUE_TOO_LONG),
        5: ("text", RejectCode.TEXT_TOO_LARGE),
        6: ("text", RejectCode.TEXT_TOO_LARGE),  # 1 character, 6 bytes once JSON-escaped
    }
    assert result.rejections[0].document_id is None  # too long to store as an id
    assert "give its 'path' instead" in result.rejections[3].reason


# --------------------------------------------------------------------------- CSV


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def test_csv_quote_open_until_end_of_file_names_the_swallowed_rows(tmp_path: Path) -> None:
    m = write(tmp_path, "m.csv", b'document_id,text\nok,fine words\na,"never closed\nb,second essay\nc,third essay\n')
    result = read_manifest(m)
    assert [d.document_id for d in result.documents] == ["ok"]
    got = rejections_by_row(result)
    assert [(n, r.document_id, r.code) for n, r in sorted(got.items())] == [
        (2, "a", RejectCode.UNTERMINATED_QUOTE),
        (3, "b", RejectCode.UNTERMINATED_QUOTE),
        (4, "c", RejectCode.UNTERMINATED_QUOTE),
    ]
    assert got[2].field == "text" and "line 3" in got[2].reason and "the file ends inside the quote" in got[2].reason
    assert "line 4 was read into row 2's 'text' cell" in got[3].reason


def test_csv_runaway_quote_closed_by_a_later_quote(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text(ESSAY, encoding="utf-8")
    m = write(
        tmp_path,
        "m.csv",
        b"document_id,path,text,products\n"
        b'a,,"a runaway, quote\n'
        b"b,e.txt,,ai\n"
        b'c,e.txt,,"\n'  # the quote closes here, cleanly: only the swallowed rows give it away
        b"d,e.txt,,ai\n",
    )
    result = read_manifest(m)
    assert [(d.document_id, d.row_number) for d in result.documents] == [("d", 4)]
    got = rejections_by_row(result)
    assert [(n, r.document_id) for n, r in sorted(got.items())] == [(1, "a"), (2, "b"), (3, "c")]
    assert "look like rows" in got[1].reason


def test_csv_stray_quote_inside_a_cell(tmp_path: Path) -> None:
    m = write(tmp_path, "m.csv", b'document_id,text\na,"opens\nb,x\nc,"closes" then text\nd,fine words\n')
    result = read_manifest(m)
    assert [d.document_id for d in result.documents] == ["d"]
    assert "',' expected after '\"'" in rejections_by_row(result)[1].reason


def test_csv_multiline_essays_are_not_flagged(tmp_path: Path) -> None:
    essay = 'First paragraph, with commas.\nHowever,this line\nends, "quoted" well.\n\nLast one'
    body = "document_id,text,products\n" + "\n".join(
        f'e{i},"{essay.replace(chr(34), chr(34) * 2)}",ai' for i in range(3)
    )
    m = write(tmp_path, "m.csv", body.encode())
    result = read_manifest(m)
    assert result.rejections == []
    assert [d.text for d in result.documents] == [essay] * 3


def test_csv_not_utf8_names_the_fix(tmp_path: Path) -> None:
    m = write(tmp_path, "m.csv", "document_id,text\na,plain\nb,café crème\n".encode("cp1252"))
    with pytest.raises(ManifestError, match=r"byte 0xE9 on line 3.*CSV UTF-8") as info:
        read_manifest(m)
    assert "iconv -f cp1252" in str(info.value)
    m = write(tmp_path, "u16.csv", "document_id,text\na,w\n".encode("utf-16"))
    with pytest.raises(ManifestError, match="UTF-16"):
        read_manifest(m)


def test_csv_not_utf8_far_into_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_reader, "_CHUNK", 7)  # the bad byte lands after several chunks
    m = write(tmp_path, "m.csv", b"document_id,text\n" + b"a,w\n" * 10 + b"z,\xc3\n")
    with pytest.raises(ManifestError, match="line 12"):
        read_manifest(m)


def test_csv_semicolon_and_tab_separated_name_the_fix(tmp_path: Path) -> None:
    for name, sep in (("semi.csv", ";"), ("tab.csv", "\t")):
        m = write(tmp_path, name, f"document_id{sep}text\na{sep}w w\n".encode())
        with pytest.raises(ManifestError, match="separated.*save it comma-separated"):
            read_manifest(m)


def test_csv_header_case_and_spacing_of_reserved_columns(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text(ESSAY, encoding="utf-8")
    m = write(tmp_path, "m.csv", b"\xef\xbb\xbf Document_ID , Path ,TEXT,Products, Section \na,e.txt,,AI,S1\n")
    result = read_manifest(m, metadata_columns=["Section"])
    (doc,) = result.documents
    assert (doc.document_id, doc.path.name, doc.products, doc.metadata) == (
        "a", "e.txt", ("ai",), {"document_id": "a", "Section": "S1"}
    )  # fmt: skip
    with pytest.raises(ManifestError, match=r"'path' appears more than once.*'path' and 'Path'"):
        read_manifest(write(tmp_path, "dup.csv", b"document_id,path,Path\na,e.txt,e.txt\n"))
    with pytest.raises(ManifestError, match="reserved"):
        read_manifest(m, metadata_columns=["PATH"])


def test_csv_row_over_the_bound_is_a_file_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_reader, "MAX_ROW_CHARS", 200)
    m = write(tmp_path, "m.csv", b'document_id,text\na,"' + b"never closed line\n" * 50)
    with pytest.raises(ManifestError, match="row starting on line 2 is longer than 200 characters"):
        read_manifest(m)


def test_csv_nul_rejects_its_row(tmp_path: Path) -> None:
    m = write(tmp_path, "m.csv", b"document_id,text\na,hello\x00there\nb,fine words\n\x00c,w\n")
    result = read_manifest(m)
    assert [d.document_id for d in result.documents] == ["b"]
    got = rejections_by_row(result)
    assert (got[1].field, got[1].code) == ("text", RejectCode.INVALID_TEXT)
    assert (got[3].field, got[3].code, got[3].document_id) == ("document_id", RejectCode.INVALID_VALUE, None)


# --------------------------------------------------------------------------- Parquet


def test_parquet_ids_keep_their_written_form(tmp_path: Path) -> None:
    table = pa.table(
        {
            "document_id": pa.array(["0012", "1.50", "1.5"], pa.string()),
            "text": ["a a", "b b", "c c"],
            "grade": pa.array([Decimal("1.50"), Decimal("2.00"), None], pa.decimal128(5, 2)),
        }
    )
    pq.write_table(table, tmp_path / "m.parquet")
    result = read_manifest(tmp_path / "m.parquet", metadata_columns=["grade"])
    assert [(d.document_id, d.metadata["grade"]) for d in result.documents] == [
        ("0012", "1.50"),
        ("1.50", "2.00"),
        ("1.5", ""),
    ]
    pq.write_table(
        pa.table({"document_id": pa.array([7, 12], pa.int64()), "text": ["a a", "b b"]}), tmp_path / "i.parquet"
    )
    assert [d.document_id for d in read_manifest(tmp_path / "i.parquet").documents] == ["7", "12"]
    pq.write_table(pa.table({"document_id": pa.array([1.5, 12.0]), "text": ["a a", "b b"]}), tmp_path / "f.parquet")
    with pytest.raises(ManifestError, match=r"floating point.*astype\('string'\)"):
        read_manifest(tmp_path / "f.parquet")


def test_parquet_non_finite_and_binary_cells(tmp_path: Path) -> None:
    table = pa.table(
        {
            "document_id": ["ok", "inf", "nan", "bin"],
            "text": ["w w", "w w", "w w", "w w"],
            "score": [0.5, float("inf"), float("nan"), 1.0],
            "blob": pa.array([b"fine", b"fine", b"fine", b"\xff\xfe"], pa.binary()),
        }
    )
    pq.write_table(table, tmp_path / "m.parquet")
    result = read_manifest(tmp_path / "m.parquet", metadata_columns=["score", "blob"])
    assert [(d.document_id, d.metadata["score"]) for d in result.documents] == [("ok", "0.5"), ("nan", "")]
    got = {r.document_id: (r.field, r.code) for r in result.rejections}
    assert got == {"inf": ("score", RejectCode.INVALID_VALUE), "bin": ("blob", RejectCode.INVALID_VALUE)}


def test_parquet_is_read_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from doccheck.sources.manifest import _parquet_reader as parquet_reader

    monkeypatch.setattr(parquet_reader, "_BATCH_ROWS", 3)
    ids = [f"d{i}" for i in range(10)]
    pq.write_table(pa.table({"document_id": ids, "text": ["w w"] * 10}), tmp_path / "m.parquet", row_group_size=4)
    result = read_manifest(tmp_path / "m.parquet")
    assert [(d.document_id, d.row_number) for d in result.documents] == [(i, n) for n, i in enumerate(ids, start=1)]
    # Wide rows: fewer rows per batch, same rows out.
    assert parquet_reader._batch_rows(pq.ParquetFile(tmp_path / "m.parquet")) == 3
    monkeypatch.setattr(parquet_reader, "_BATCH_BYTES", 10)
    assert parquet_reader._batch_rows(pq.ParquetFile(tmp_path / "m.parquet")) == 1
    assert read_manifest(tmp_path / "m.parquet").documents == result.documents


def test_notebook_rows_with_surrogates_are_rejected_not_raised(tmp_path: Path) -> None:
    import pandas as pd

    from doccheck.notebook import plan_dataframe

    df = pd.DataFrame({"document_id": ["a", "b\ud800", "c"], "text": ["w w", "x x", "y\x00"]}, dtype=object)
    plan = plan_dataframe(df, base_dir=tmp_path, campaign="nb")
    assert list(plan.documents["document_id"]) == ["a"]
    assert [(r.row_number, r.error_code) for r in plan.rejected.itertuples()] == [
        (2, RejectCode.INVALID_VALUE),
        (3, RejectCode.INVALID_TEXT),
    ]
