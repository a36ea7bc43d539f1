"""The report page at term scale (issue 28), at small scale: the entry page links every group
and each group's page holds exactly its documents; the rows are data the script pages
through, with the rows of most concern also in the HTML; escaping holds on every page."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from doccheck.outputs._parquet_reports import ReportTables, rejection_rows, write_reports
from doccheck.outputs.instructor import write_instructor_files
from doccheck.outputs.instructor._table_view import STATIC_ROWS
from doccheck.outputs.instructor._tally import NO_GROUP, group_column, group_slug
from doccheck.pipeline import RunOptions
from doccheck.sources.manifest import Rejection

EVIL = "<script>window.__pwned = 1</script>"


def term(n: int, courses: list[str]) -> tuple[ReportTables, dict[str, dict[str, str]]]:
    subs, ai, sim = [], [], []
    for i in range(n):
        doc, check = f"d{i:04d}", f"chk_{i:04d}"
        subs.append({"document_id": doc, "row_number": i + 1, "mode": "text", "check_id": check,
                     "products": ["ai", "similarity"], "status": "submitted", "words": 400, "cost_cents": 6})  # fmt: skip
        ai.append({"document_id": doc, "check_id": check, "status": "completed", "score": 0.1,
                   "label": "ai" if i % 7 == 0 else "human"})  # fmt: skip
        sim.append({"document_id": doc, "check_id": check, "status": "completed", "score": float(i % 50)})
    subs += rejection_rows([Rejection(n + 1, "bad", "text", "empty_text", "row, field 'text': empty")])
    metadata = {f"d{i:04d}": {"course": courses[i % len(courses)]} for i in range(n) if i % 11}  # some without
    return ReportTables(subs, ai, sim, []), metadata


def rows_data(page: str) -> list[list[Any]]:
    block = re.search(r'<script type="application/json" id="doccheck-rows">(.*?)</script>', page, re.S)
    assert block is not None and "<" not in block.group(1)
    rows: list[list[Any]] = json.loads(block.group(1))
    return rows


def static_ids(page: str) -> list[str]:
    return re.findall(r'<tr data-flagged="[01]" data-document-id="([^"]*)"', page)


COURSES = ["BIO101", "CHEM 200", EVIL, "../../etc"]


@pytest.mark.parametrize("from_folder", [True, False])
def test_entry_page_links_every_group_and_each_group_page_holds_exactly_its_documents(
    tmp_path: Path, from_folder: bool
) -> None:
    tables, metadata = term(60, COURSES)
    paths = write_reports(tmp_path, "run-1", tables, metadata=metadata)
    given = None
    if not from_folder:
        from doccheck.outputs.instructor._instructor_files import read_run_tables

        given = read_run_tables(paths.run_dir)
    written = write_instructor_files(paths.run_dir, paths.latest_dir, campaign="term", run_id="r1",
                                     group_by="course", tables=given)  # fmt: skip
    entry = written.report_html.read_text()
    assert 'id="documents"' not in entry  # grouped: the entry page lists groups, not documents
    expected: dict[str, set[str]] = {}
    for i in range(60):
        doc = f"d{i:04d}"
        expected.setdefault(metadata.get(doc, {}).get("course") or NO_GROUP, set()).add(doc)
    pages = sorted((paths.run_dir / "groups").iterdir())
    assert len(pages) == len(expected) == 5
    for group, documents in expected.items():
        href = f"groups/{group_slug(group)}.html"
        assert f'href="{href}"' in entry
        assert f'href="../run-1/{href}"' in (paths.latest_dir / "report.html").read_text()  # latest links back
        page = (paths.run_dir / href).read_text()
        assert {r[1] for r in rows_data(page)} == documents  # every row as data, no other
        assert set(static_ids(page)) == documents  # and as HTML (a group's page is small)
        assert "<script>window" not in page and "&lt;script&gt;" in page or group != EVIL
    # The groups' table: with flags nobody decided on first (d0000 is flagged: label ai).
    names = re.findall(r'<td><a href="groups/[^"]+">([^<]*)</a></td>', entry)
    assert len(names) == 5 and "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in names
    assert all(not p.name.startswith(".") and "/" not in p.name for p in pages)


def test_group_pages_are_written_in_this_process_and_leave_no_spill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large run's pages were written by spawned workers, each re-importing the command (~160
    MB of RSS apiece beside the run's: issue 49); no page starts a process now, and the spilled
    rows and the temporary folder are gone once the pages are written."""
    import multiprocessing.process
    import subprocess

    def no_process(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a group page started a process")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", no_process)
    monkeypatch.setattr(subprocess.Popen, "__init__", no_process)
    tables, metadata = term(60, COURSES)
    paths = write_reports(tmp_path, "run-1", tables, metadata=metadata)
    write_instructor_files(paths.run_dir, None, campaign="term", run_id="r1", group_by="course")
    assert len(list((paths.run_dir / "groups").iterdir())) == 5
    assert not [p for p in paths.run_dir.iterdir() if p.name.startswith(".")]  # no spill, no temp folder


def test_a_run_no_longer_grouped_loses_its_group_pages_and_a_rewrite_is_the_same(tmp_path: Path) -> None:
    tables, metadata = term(30, COURSES)
    paths = write_reports(tmp_path, "run-1", tables, metadata=metadata)
    first = write_instructor_files(paths.run_dir, None, campaign="term", group_by="course")
    before = {p.name: p.read_text() for p in (paths.run_dir / "groups").iterdir()}
    again = write_instructor_files(paths.run_dir, None, campaign="term", group_by="course")
    after = {p.name: p.read_text() for p in (paths.run_dir / "groups").iterdir()}

    def strip(page: str) -> str:
        return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", page)

    assert {k: strip(v) for k, v in before.items()} == {k: strip(v) for k, v in after.items()}
    assert strip(first.report_html.read_text()) == strip(again.report_html.read_text())
    write_instructor_files(paths.run_dir, None, campaign="term")
    assert not (paths.run_dir / "groups").exists()
    assert not [p for p in paths.run_dir.iterdir() if p.name.startswith(".")]  # no temporary left


def test_ungrouped_page_has_every_row_as_data_and_the_most_concerning_as_html(tmp_path: Path) -> None:
    n = STATIC_ROWS + 150
    tables, metadata = term(n, ["one"])
    paths = write_reports(tmp_path, "run-1", tables, metadata=metadata)
    page = write_instructor_files(paths.run_dir, None, campaign="term").report_html.read_text()
    data = rows_data(page)
    assert len(data) == n and {r[1] for r in data} == {f"d{i:04d}" for i in range(n)}
    flagged = [f"d{i:04d}" for i in range(n) if i % 7 == 0 or i % 50 >= 25]  # label ai, or similarity >= 25
    shown = static_ids(page)
    assert (
        len(shown) == STATIC_ROWS
        and shown == (flagged + [d for d in sorted({r[1] for r in data}) if d not in flagged])[:STATIC_ROWS]
    )
    assert f"the {STATIC_ROWS} documents of most concern" in page


def test_group_by_names_a_column_or_fails_before_anything_is_sent() -> None:
    assert group_column("course", ["document_id", "meta_course"]) == "meta_course"
    assert group_column("section", ["section", "meta_section"]) == "section"
    assert group_column(None, ["x"]) is None
    with pytest.raises(ValueError, match=r"--group-by 'course'.*--metadata-columns \(none given\)"):
        RunOptions.from_flat(manifest="m.csv", group_by="course")
    options = RunOptions.from_flat(manifest="m.csv", group_by="course", metadata_columns="course")
    assert options.output.group_by == "course"


def test_group_slugs_are_safe_file_names_and_unique() -> None:
    slugs = {group_slug(v) for v in ["a/b", "a b", "a-b", "../..", EVIL, "", "é"]}
    assert len(slugs) == 7
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", s) and not s.startswith(".") for s in slugs)


def test_an_export_page_names_the_export_counts_students_and_lists_what_was_not_checked(tmp_path: Path) -> None:
    """Issue 24 on the page: which LMS export, one student with two files is one student, late
    work marked, and the roster's student without work (and a link entry) listed, not counted."""
    from doccheck.outputs.instructor._instructor_files import read_run_tables

    tables, _ = term(3, ["x"])
    paths = write_reports(tmp_path, "run-1", tables)
    given = read_run_tables(paths.run_dir)
    export = {"lms": "moodle", "export_name": "BIO101-Essay.zip"}
    students = {"d0000": ("u1", "Ada", True), "d0001": ("u1", "Ada", False), "d0002": ("u2", EVIL, False)}
    for row in given["submissions"]:
        if row["document_id"] in students:
            sid, name, late = students[row["document_id"]]
            row.update(export, student_id=sid, student=name, late=late)
    given["submissions"] += [
        {**export, "status": "no_submission", "student_id": "u3", "student": "Cy", "error_message": "no file"},
        {**export, "status": "not_a_document", "student_id": "u2", "student": EVIL, "error_code": "link",
         "error_message": "a URL submission"},
    ]  # fmt: skip
    page = write_instructor_files(paths.run_dir, None, campaign="bio", tables=given).report_html.read_text()
    assert "from the Moodle export <code>BIO101-Essay.zip</code>" in page
    assert "<b>2</b><span>students</span>" in page and "<b>3</b><span>documents checked</span>" in page
    assert sorted(r[1] for r in rows_data(page)) == ["d0000", "d0001", "d0002"]  # not the roster's Cy
    assert 'data-column="late"' in page and '<span class="badge flag">late</span>' in page
    not_checked = page.split('id="not-checked"')[1].split("</table>")[0]
    assert "Cy" in not_checked and "no_submission" in not_checked and "not_a_document (link)" in not_checked
    assert "<script>window" not in page


def test_a_chunk_is_split_by_group_in_file_order_whatever_the_values() -> None:
    """``_by_group``: one reordering a chunk; the groups as they first appear, each group's rows in
    file order, and values that share a group (None and "", True and "true") in one slice."""
    import pyarrow as pa

    from doccheck.outputs.instructor._groups import _by_group

    values = ["b", None, "a", "", "b", "true", "a", None]
    batch = pa.record_batch({"course": pa.array(values, pa.string()), "i": pa.array(range(len(values)))})
    ordered, spans = _by_group(batch, "course")
    got = {key: ordered.slice(start, length).column(1).to_pylist() for key, start, length in spans}
    assert [key for key, _, _ in spans] == ["b", NO_GROUP, "a", "true"]
    assert got == {"b": [0, 4], NO_GROUP: [1, 3, 7], "a": [2, 6], "true": [5]}
    flags = pa.record_batch({"late": pa.array([True, None, False, True]), "i": pa.array(range(4))})
    ordered, spans = _by_group(flags, "late")
    assert [(key, ordered.slice(s, n).column(1).to_pylist()) for key, s, n in spans] == [
        ("true", [0, 3]), (NO_GROUP, [1]), ("false", [2])
    ]  # fmt: skip
    _, spans = _by_group(batch, "no_such_column")
    assert spans == [(NO_GROUP, 0, len(values))]
