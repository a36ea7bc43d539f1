"""Manifest reading and row validation: every reject code, every format, path confinement."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from doccheck.sources.manifest import (
    MAX_FILE_BYTES,
    MULTIPART_MAX_BYTES,
    ManifestError,
    RejectCode,
    parse_products,
    read_manifest,
)
from tests import generated_documents as gen

ESSAY = "The quick brown fox jumps over the lazy dog. " * 20  # 180 words


def write_csv(folder: Path, header: str, *rows: str, name: str = "manifest.csv") -> Path:
    path = folder / name
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "essay.txt").write_text(ESSAY, encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\n\nShort markdown notes here.\n", encoding="utf-8")
    return tmp_path


def codes(result) -> dict[str, str]:
    return {r.document_id or f"row{r.row_number}": r.code for r in result.rejections}


def test_valid_rows_text_and_file(corpus: Path) -> None:
    m = write_csv(corpus, "document_id,path,text,name", "a,essay.txt,,", "b,,Inline words here,My label")
    result = read_manifest(m)
    assert result.rejections == []
    a, b = result.documents
    assert a.path == (corpus / "essay.txt").resolve() and a.text is None
    assert a.name == "essay.txt" and a.words == 180
    assert a.content_hash == hashlib.sha256(ESSAY.encode()).hexdigest()
    assert a.size_bytes == len(ESSAY.encode())
    assert b.text == "Inline words here" and b.path is None and b.name == "My label" and b.words == 3
    assert b.content_hash == hashlib.sha256(b"Inline words here").hexdigest()
    assert a.products == ("ai",) and a.metadata == {"document_id": "a"}
    assert [d.row_number for d in result.documents] == [1, 2]


def test_every_row_level_reject_code(corpus: Path) -> None:
    (corpus / "empty.txt").write_bytes(b"")
    (corpus / "blank.txt").write_text("   \n\t\n", encoding="utf-8")
    (corpus / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n....")
    (corpus / "tool.exe").write_bytes(b"MZ....")
    (corpus / "broken.pdf").write_bytes(b"this is not a pdf at all")
    (corpus / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (corpus / "adir.txt").mkdir()
    (corpus / "scan.pdf").write_bytes(gen.pdf_image_only())
    (corpus / "locked.pdf").write_bytes(gen.pdf_text(["a locked essay"], user_password="pw"))
    (corpus / "locked.docx").write_bytes(gen.locked_office())
    m = write_csv(
        corpus,
        "document_id,path,text,products",
        "ok,essay.txt,,",
        ",essay.txt,,",  # missing id
        "ok,notes.md,,",  # duplicate id
        "both,essay.txt,some text,",
        "neither,,,",
        "missing,nope.txt,,",
        "escape,../outside.txt,,",
        "absolute,/etc/hostname,,",
        "zero,empty.txt,,",
        "blankfile,blank.txt,,",
        "blanktext,,   ,",
        "png,image.png,,",
        "exe,tool.exe,,",
        "badpdf,broken.pdf,,",
        "latin1,latin1.txt,,",
        "dir,adir.txt,,",
        "prod,essay.txt,,ai;plagiarism",
        "scan,scan.pdf,,",
        "lockedpdf,locked.pdf,,",
        "lockeddocx,locked.docx,,",
    )
    result = read_manifest(m)
    assert [d.document_id for d in result.documents] == ["ok"]
    assert codes(result) == {
        "row2": RejectCode.MISSING_ID,
        "ok": RejectCode.DUPLICATE_ID,
        "both": RejectCode.BOTH_PATH_AND_TEXT,
        "neither": RejectCode.NO_PATH_OR_TEXT,
        "missing": RejectCode.FILE_NOT_FOUND,
        "escape": RejectCode.PATH_ESCAPES_MANIFEST_DIR,
        "absolute": RejectCode.PATH_ESCAPES_MANIFEST_DIR,
        "zero": RejectCode.EMPTY_DOCUMENT,
        "blankfile": RejectCode.EMPTY_DOCUMENT,
        "blanktext": RejectCode.EMPTY_DOCUMENT,
        "png": RejectCode.IMAGE_WITHOUT_TEXT,
        "exe": RejectCode.UNSUPPORTED_TYPE,
        "badpdf": RejectCode.UNREADABLE_FILE,
        "latin1": RejectCode.UNREADABLE_FILE,
        "dir": RejectCode.NOT_A_FILE,
        "prod": RejectCode.INVALID_PRODUCTS,
        "scan": RejectCode.IMAGE_ONLY_PDF,
        "lockedpdf": RejectCode.PASSWORD_PROTECTED,
        "lockeddocx": RejectCode.PASSWORD_PROTECTED,
    }
    by_id = {r.document_id: r for r in result.rejections}
    assert by_id["ok"].row_number == 3 and "row 1" in by_id["ok"].reason
    assert by_id["prod"].field == "products" and "plagiarism" in by_id["prod"].reason
    assert by_id["blanktext"].field == "text"
    assert "a photo or scan, e.g. handwriting" in by_id["png"].reason and "review it by hand" in by_id["png"].reason
    assert "image-only PDF" in by_id["scan"].reason
    for rejection in result.rejections:
        assert rejection.reason.startswith(f"row {rejection.row_number}")
        assert rejection.field in rejection.reason


def test_duplicate_keeps_first_even_if_first_is_bad(corpus: Path) -> None:
    m = write_csv(corpus, "document_id,path", "x,nope.txt", "x,essay.txt")
    result = read_manifest(m)
    assert result.documents == []
    assert [r.code for r in result.rejections] == [RejectCode.FILE_NOT_FOUND, RejectCode.DUPLICATE_ID]


def test_symlink_pointing_outside_is_rejected(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("private words of someone else", encoding="utf-8")
    inside = tmp_path / "inside"
    inside.mkdir()
    (inside / "link.txt").symlink_to(outside / "secret.txt")
    (inside / "own.txt").write_text("my own words", encoding="utf-8")
    (inside / "inner_link.txt").symlink_to(inside / "own.txt")
    (inside / "sub").mkdir()
    m = write_csv(inside, "document_id,path", "l,link.txt", "i,inner_link.txt", "dots,sub/../own.txt")
    result = read_manifest(m)
    assert codes(result) == {"l": RejectCode.PATH_ESCAPES_MANIFEST_DIR}
    assert "symbolic link" in result.rejections[0].reason
    # A link that stays inside, and '..' that stays inside, are fine.
    assert sorted(d.document_id for d in result.documents) == ["dots", "i"]


def test_symlinked_manifest_folder_is_not_an_escape(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.txt").write_text("words in a file", encoding="utf-8")
    write_csv(real, "document_id,path", "a,a.txt")
    (tmp_path / "alias").symlink_to(real)
    result = read_manifest(tmp_path / "alias" / "manifest.csv")
    assert result.rejections == [] and len(result.documents) == 1


def test_large_files_sparse(tmp_path: Path) -> None:
    with open(tmp_path / "big.pdf", "wb") as f:
        f.truncate(MULTIPART_MAX_BYTES + 1)
    with open(tmp_path / "huge.txt", "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    with open(tmp_path / "limit.docx", "wb") as f:
        f.truncate(MAX_FILE_BYTES)
    m = write_csv(tmp_path, "document_id,path", "big,big.pdf", "huge,huge.txt", "limit,limit.docx")
    result = read_manifest(m)
    assert codes(result) == {"huge": RejectCode.FILE_TOO_LARGE}
    assert str(MAX_FILE_BYTES + 1) in result.rejections[0].reason
    big, limit = result.documents
    assert big.size_bytes == MULTIPART_MAX_BYTES + 1 and big.words is None
    assert limit.size_bytes == MAX_FILE_BYTES and limit.words is None
    # The streamed hash equals the hash of the whole content.
    zeros = hashlib.sha256()
    remaining = MULTIPART_MAX_BYTES + 1
    while remaining:
        n = min(remaining, 1 << 20)
        zeros.update(bytes(n))
        remaining -= n
    assert big.content_hash == zeros.hexdigest()


@pytest.fixture()
def small_limits(monkeypatch: pytest.MonkeyPatch) -> int:
    """Shrink the multipart limit and the read chunk, so streaming paths run on small files."""
    import doccheck.sources.manifest._files as manifest

    monkeypatch.setattr(manifest, "MULTIPART_MAX_BYTES", 64 * 1024)
    monkeypatch.setattr(manifest, "_CHUNK", 4099)  # odd, so multi-byte characters get split

    def whole_read_forbidden(path: Path) -> None:
        raise AssertionError(f"{path} is over the limit and must be streamed, not read whole")

    monkeypatch.setattr(manifest, "_hash_and_extract", whole_read_forbidden)
    return 64 * 1024


def test_large_text_words_counted_while_streaming(tmp_path: Path, small_limits: int) -> None:
    # Words straddle the chunk borders, with multi-byte characters around them.
    unit = "naïve café-owner don't stop "  # 4 words
    repeats = (small_limits // len(unit.encode())) + 1000
    data = (unit * repeats).encode("utf-8")
    (tmp_path / "big.txt").write_bytes(data)
    m = write_csv(tmp_path, "document_id,path", "big,big.txt")
    (doc,) = read_manifest(m).documents
    assert doc.size_bytes > small_limits
    assert doc.words == 4 * repeats
    assert doc.content_hash == hashlib.sha256(data).hexdigest()


def test_large_text_of_whitespace_is_empty(tmp_path: Path, small_limits: int) -> None:
    (tmp_path / "spaces.txt").write_bytes(b" \n" * (small_limits // 2 + 10))
    m = write_csv(tmp_path, "document_id,path", "s,spaces.txt")
    assert codes(read_manifest(m)) == {"s": RejectCode.EMPTY_DOCUMENT}


def test_docx_and_pdf_without_text_are_empty(tmp_path: Path) -> None:
    import docx
    from fpdf import FPDF

    docx.Document().save(tmp_path / "blank.docx")
    pdf = FPDF()
    pdf.add_page()
    pdf.output(str(tmp_path / "blank.pdf"))
    full = docx.Document()
    full.add_paragraph("A real paragraph with seven words.")
    full.save(tmp_path / "full.docx")
    m = write_csv(tmp_path, "document_id,path", "bd,blank.docx", "bp,blank.pdf", "fd,full.docx")
    result = read_manifest(m)
    assert codes(result) == {"bd": RejectCode.EMPTY_DOCUMENT, "bp": RejectCode.EMPTY_DOCUMENT}
    assert result.documents[0].words == 6


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "locked.txt"
    f.write_text("words", encoding="utf-8")
    real_read = Path.read_bytes

    def refuse(self: Path) -> bytes:
        if self.name == "locked.txt":
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    m = write_csv(tmp_path, "document_id,path", "x,locked.txt")
    (rejection,) = read_manifest(m).rejections
    assert rejection.code == RejectCode.UNREADABLE_FILE and "Permission denied" in rejection.reason


def test_products_parsing_and_defaults(corpus: Path) -> None:
    m = write_csv(
        corpus,
        "document_id,text,products",
        "a,one two,",
        "b,one two,similarity|ai",
        'c,one two," AI , similarity ;"',
        "d,one two,similarity",
    )
    docs = read_manifest(m, default_products=("similarity", "ai")).documents
    assert [d.products for d in docs] == [("ai", "similarity")] * 3 + [("similarity",)]
    assert parse_products("ai;ai") == ("ai",)
    assert parse_products(None, default=("similarity",)) == ("similarity",)
    with pytest.raises(ValueError, match="'x'"):
        parse_products("ai,x")
    with pytest.raises(ManifestError, match="default products"):
        read_manifest(m, default_products=("nope",))


def test_metadata_allowlist(corpus: Path) -> None:
    m = write_csv(
        corpus,
        "document_id,text,student_email,section,grade",
        "a,some words,ann@example.edu,S1,",
    )
    (doc,) = read_manifest(m).documents
    assert doc.metadata == {"document_id": "a"}  # nothing sent by default
    (doc,) = read_manifest(m, metadata_columns=["section", "grade", "document_id"]).documents
    assert doc.metadata == {"document_id": "a", "section": "S1", "grade": ""}
    assert "student_email" not in doc.metadata
    with pytest.raises(ManifestError, match="'cohort'.*not found"):
        read_manifest(m, metadata_columns=["cohort"])
    with pytest.raises(ManifestError, match="cannot be sent as metadata"):
        read_manifest(m, metadata_columns=["text"])


def test_manifest_level_errors(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="does not exist"):
        read_manifest(tmp_path / "none.csv")
    no_id = write_csv(tmp_path, "id,text", "a,b", name="noid.csv")
    with pytest.raises(ManifestError, match=r"noid\.csv.*'document_id' is missing"):
        read_manifest(no_id)
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    with pytest.raises(ManifestError, match="empty"):
        read_manifest(tmp_path / "empty.csv")
    (tmp_path / "m.xlsx").write_text("x", encoding="utf-8")
    with pytest.raises(ManifestError, match="unsupported extension"):
        read_manifest(tmp_path / "m.xlsx")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(ManifestError, match=r"bad\.parquet"):
        read_manifest(tmp_path / "bad.parquet")
    (tmp_path / "bad.csv").write_bytes(b"document_id,text\n\xff\xfe,zz\n")
    with pytest.raises(ManifestError, match=r"bad\.csv"):
        read_manifest(tmp_path / "bad.csv")


def test_header_only_csv_is_empty_result(tmp_path: Path) -> None:
    result = read_manifest(write_csv(tmp_path, "document_id,path,text"))
    assert result.documents == [] and result.rejections == []


def test_jsonl_line_numbers_and_bad_lines(corpus: Path) -> None:
    lines = [
        json.dumps({"document_id": "a", "path": "essay.txt"}),
        "",
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"document_id": 42, "text": "numeric id", "products": ["similarity", "ai"]}),
        json.dumps({"document_id": "e", "text": ""}),
        json.dumps({"document_id": "n", "text": None, "path": None}),
    ]
    m = corpus / "m.jsonl"
    m.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = read_manifest(m)
    assert [(d.document_id, d.row_number) for d in result.documents] == [("a", 1), ("42", 5)]
    assert result.documents[1].products == ("ai", "similarity")
    assert [(r.row_number, r.code) for r in result.rejections] == [
        (3, RejectCode.INVALID_ROW),
        (4, RejectCode.INVALID_ROW),
        (6, RejectCode.EMPTY_DOCUMENT),
        (7, RejectCode.NO_PATH_OR_TEXT),
    ]
    assert "not valid JSON" in result.rejections[0].reason


def test_parquet_reads_everything_as_strings(corpus: Path) -> None:
    table = pa.table(
        {
            "document_id": pa.array([1, 2, None], pa.int64()),
            "path": pa.array(["essay.txt", None, "notes.md"]),
            "text": pa.array([None, "inline text", None]),
            "products": pa.array([["ai", "similarity"], None, None], pa.list_(pa.string())),
            "section": pa.array([1.5, None, 3.0]),
        }
    )
    pq.write_table(table, corpus / "m.parquet")
    result = read_manifest(corpus / "m.parquet", metadata_columns=["section"])
    assert [d.document_id for d in result.documents] == ["1", "2"]
    assert result.documents[0].products == ("ai", "similarity")
    assert result.documents[0].metadata == {"document_id": "1", "section": "1.5"}
    assert result.documents[1].metadata == {"document_id": "2", "section": ""}
    assert [(r.row_number, r.code) for r in result.rejections] == [(3, RejectCode.MISSING_ID)]


def test_csv_keeps_na_like_strings_and_leading_zeros(tmp_path: Path) -> None:
    m = write_csv(tmp_path, "document_id,text", "007,NA", "NULL,None")
    docs = read_manifest(m).documents
    assert [(d.document_id, d.text) for d in docs] == [("007", "NA"), ("NULL", "None")]


def test_csv_ragged_row_is_one_rejection(tmp_path: Path) -> None:
    m = tmp_path / "m.csv"
    m.write_text(
        'document_id,text\n\na,first text\nb,oops, an unquoted comma\n,,\nc\nd,"quoted, fine"\n', encoding="utf-8"
    )
    result = read_manifest(m)
    # Blank lines and rows of empty cells (spreadsheet exports) are skipped, not numbered.
    assert [(d.row_number, d.document_id) for d in result.documents] == [(1, "a"), (4, "d")]
    assert [(r.row_number, r.code) for r in result.rejections] == [
        (2, RejectCode.INVALID_ROW),
        (3, RejectCode.NO_PATH_OR_TEXT),
    ]
    assert "3 fields but the header has 2" in result.rejections[0].reason


def test_csv_duplicate_header_is_config_error(tmp_path: Path) -> None:
    m = write_csv(tmp_path, "document_id,text,text", "a,b,c")
    with pytest.raises(ManifestError, match="'text' appears more than once"):
        read_manifest(m)


def test_csv_long_text_cell_and_crlf_kept(tmp_path: Path) -> None:
    long_text = "word " * 60_000  # 300 KB, beyond the csv module's default field limit
    m = tmp_path / "m.csv"
    m.write_bytes(b"document_id,text\r\n" + f'long,"{long_text}"\r\n'.encode() + b'crlf,"line one\r\nline two"\r\n')
    docs = read_manifest(m).documents
    assert docs[0].words == 60_000
    assert docs[1].text == "line one\r\nline two"
    assert docs[1].content_hash == hashlib.sha256(b"line one\r\nline two").hexdigest()


def test_text_without_words_or_invalid_unicode(tmp_path: Path) -> None:
    m = tmp_path / "m.jsonl"
    m.write_text(
        '{"document_id": "sym", "text": "--- !!! ..."}\n{"document_id": "sur", "text": "bad \\ud800 half"}\n',
        encoding="utf-8",
    )
    assert codes(read_manifest(m)) == {"sym": RejectCode.EMPTY_DOCUMENT, "sur": RejectCode.INVALID_TEXT}


def test_symlink_loop_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "loop.txt").symlink_to(tmp_path / "loop.txt")
    m = write_csv(tmp_path, "document_id,path", "x,loop.txt")
    (rejection,) = read_manifest(m).rejections
    assert rejection.code in (RejectCode.UNREADABLE_FILE, RejectCode.FILE_NOT_FOUND)


def test_fifo_is_not_a_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.txt")
    m = write_csv(tmp_path, "document_id,path", "p,pipe.txt")
    assert codes(read_manifest(m)) == {"p": RejectCode.NOT_A_FILE}


def test_large_text_follows_extract_rules(tmp_path: Path, small_limits: int) -> None:
    body = "word " * (small_limits // 8)  # over the limit once UTF-16 encoded
    (tmp_path / "utf16.txt").write_bytes(body.encode("utf-16"))
    (tmp_path / "nul.txt").write_bytes(b"a " * (small_limits // 2) + b"\x00 more")
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9 " * (small_limits // 4))
    m = write_csv(tmp_path, "document_id,path", "u,utf16.txt", "n,nul.txt", "l,latin.txt")
    result = read_manifest(m)
    assert [(d.document_id, d.words) for d in result.documents] == [("u", small_limits // 8)]
    assert codes(result) == {"n": RejectCode.UNREADABLE_FILE, "l": RejectCode.UNREADABLE_FILE}
    assert "NUL" in result.rejections[0].reason


def test_name_defaults_to_the_path_as_written(tmp_path: Path) -> None:
    (tmp_path / "blob-1234.txt").write_text("the real essay", encoding="utf-8")
    (tmp_path / "essay.txt").symlink_to(tmp_path / "blob-1234.txt")
    (doc,) = read_manifest(write_csv(tmp_path, "document_id,path", "a,essay.txt")).documents
    assert doc.name == "essay.txt" and doc.path == (tmp_path / "blob-1234.txt").resolve()


def test_impossible_paths_are_rejected_not_raised(tmp_path: Path) -> None:
    m = tmp_path / "m.jsonl"
    rows = [{"document_id": "nul", "path": "a\u0000b.txt"}, {"document_id": "long", "path": "x" * 5000 + ".txt"}]
    m.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    result = read_manifest(m)
    assert codes(result) == {"nul": RejectCode.INVALID_PATH, "long": RejectCode.INVALID_PATH}
    assert len(result.rejections[1].reason) < 400
