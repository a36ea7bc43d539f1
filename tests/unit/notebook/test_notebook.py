"""The notebook API without a service: DataFrame → validated plan, clear call errors, the
result object, and the sync wrapper inside an already running event loop (as in Jupyter)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import doccheck
from doccheck.client import ConfigurationError
from doccheck.notebook import CheckResult, check_dataframe, plan_dataframe, progress_display
from doccheck.notebook._api import _manifest_rows, _prepare, _resolve_columns, _run_sync, _write_manifest
from doccheck.notebook._progress import ProgressState
from doccheck.outputs import ReportTables, to_dataframes
from doccheck.pipeline import load_plan

LONG = "The harbour lights came on one by one as the fishing boats returned in the evening. " * 4


def _plan(df: pd.DataFrame, base: Path, **kw):  # type: ignore[no-untyped-def]
    args = {"text_column": None, "path_column": None, "id_column": "document_id", "products_column": None,
            "name_column": None, "metadata_columns": ()}  # fmt: skip
    args.update(kw)
    rows = _manifest_rows(df, _resolve_columns(df, **args), base_dir=base)
    manifest = _write_manifest(rows, base_dir=base, needs_base=args["path_column"] is not None)
    try:
        return load_plan(manifest, campaign="nb", products=["ai"], metadata_columns=args["metadata_columns"])
    finally:
        Path(manifest).unlink()


def test_text_rows_are_validated_like_manifest_rows(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "document_id": ["a", "b", None, "a", 7],
            "answer": [LONG, "   ", LONG, LONG + "x", LONG + "y"],
            "section": ["s1", None, "s3", "s4", "s5"],
        }
    )
    plan = _plan(df, tmp_path, text_column="answer", metadata_columns=["section"])
    assert [d.document_id for d in plan.documents] == ["a", "7"]  # numbers become strings
    rejected = {r.row_number: r.code for r in plan.rejections}
    assert set(rejected) == {2, 3, 4}
    assert rejected[3] == "missing_id" and rejected[4] == "duplicate_id"
    assert all(f"row {r.row_number}" in r.reason for r in plan.rejections)  # rows are DataFrame positions, 1-based
    assert plan.documents[0].metadata["section"] == "s1"
    assert not list(tmp_path.iterdir())  # the temporary manifest is gone


def test_path_rows_resolve_against_base_dir(tmp_path: Path) -> None:
    (tmp_path / "essays").mkdir()
    (tmp_path / "essays" / "one.txt").write_text(LONG)
    outside = tmp_path.parent / f"outside-{tmp_path.name}.txt"
    outside.write_text(LONG)
    df = pd.DataFrame(
        {"document_id": ["p1", "p2", "p3", "p4"],
         "file": ["essays/one.txt", str(tmp_path / "essays" / "one.txt"), str(outside), "essays/missing.txt"]}
    )  # fmt: skip
    try:
        plan = _plan(df, tmp_path, path_column="file")
    finally:
        outside.unlink()
    assert [d.document_id for d in plan.documents] == ["p1", "p2"]  # an absolute path inside base_dir is fine
    codes = {r.document_id: r.code for r in plan.rejections}
    assert codes.get("p3") == "path_escapes_manifest_dir"
    assert "p4" in codes
    assert [p.name for p in tmp_path.iterdir()] == ["essays"]  # hidden manifest removed


def test_the_manifest_column_names_are_the_defaults(tmp_path: Path) -> None:
    df = pd.DataFrame({"document_id": ["a", "b"], "text": [LONG, LONG + " b"], "name": ["A", "B"],
                       "products": ["ai;similarity", None]})  # fmt: skip
    plan = plan_dataframe(df, base_dir=tmp_path)
    assert list(plan.documents["document_id"]) == ["a", "b"] and plan.rejected.empty
    assert list(plan.documents["products"]) == ["ai;similarity", "ai"]  # the row's own, else the default
    assert plan.estimated_cost_cents == 3 + 1 and "estimated_cost=$0.04" in repr(plan)


def test_call_errors_name_the_fix_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import traceback

    monkeypatch.delenv("DOCCHECK_API_KEY", raising=False)
    monkeypatch.delenv("DOCCHECK_BASE_URL", raising=False)
    df = pd.DataFrame({"document_id": ["a"], "answer": [LONG]})
    with pytest.raises(ValueError, match="text_column='...' or path_column='...'"):
        check_dataframe(df)
    with pytest.raises(ValueError, match="text_column='body'"):
        check_dataframe(df, text_column="body")
    with pytest.raises(ValueError, match="id_column='<the column of unique ids>'"):
        check_dataframe(df, text_column="answer", id_column="id")
    with pytest.raises(ValueError, match="also a manifest column"):
        check_dataframe(df, text_column="answer", metadata_columns=["answer"])
    threads = threading.active_count()
    with pytest.raises(ConfigurationError, match="DOCCHECK_BASE_URL") as no_url:
        check_dataframe(df, text_column="answer")
    with pytest.raises(ConfigurationError, match="DOCCHECK_API_KEY"):
        check_dataframe(df, text_column="answer", base_url="http://127.0.0.1:9/api/v1")
    assert threading.active_count() == threads  # raised in the caller's thread, no worker started
    frames = traceback.extract_tb(no_url.value.__traceback__)
    assert len(frames) <= 4 and not any("asyncio" in f.filename for f in frames)


def test_the_key_is_in_no_repr(tmp_path: Path) -> None:
    secret = "sk-live-do-not-show-0123456789"
    df = pd.DataFrame({"document_id": ["a"], "text": [LONG]})
    prepared = _prepare(df, text_column=None, path_column=None, id_column="document_id", products=("ai",),
                        products_column=None, name_column=None, metadata_columns=(), base_dir=tmp_path,
                        campaign="nb", base_url="http://127.0.0.1:9/api/v1", api_key=secret)  # fmt: skip
    assert secret not in repr(prepared) and secret not in str(prepared.__dict__)
    assert prepared.api_key is not None and prepared.api_key.get_secret_value() == secret
    prepared.discard()


def test_progress_line_and_quiet_mode() -> None:
    state = ProgressState(documents=30, submitted=30, products=60, finished=45, cost_cents=123, phase="wait")
    assert state.text() == "submitted 30/30 · results 45/60 · pending 15 · cost so far $1.23"
    assert "<progress value='45' max='60'" in state._repr_html_()
    quiet = progress_display(False)
    quiet.update(submitted=1)  # does nothing, never raises
    quiet.close()


def test_check_result_is_a_mapping_of_report_frames() -> None:
    frames = to_dataframes(ReportTables(submissions=[{"document_id": "a", "status": "rejected"}]))
    result = CheckResult(**frames, run_id="r", campaign="c")
    assert list(result) == ["submissions", "ai_results", "similarity_results", "similarity_sources", "cohort_matches"]
    assert result["ai_results"] is result.ai_results and len(result) == 5
    assert list(result.rejected["document_id"]) == ["a"]
    assert "submissions=1" in repr(result)
    with pytest.raises(KeyError):
        result["nope"]
    assert doccheck.check_dataframe is check_dataframe


def test_sync_wrapper_works_inside_a_running_loop() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def in_jupyter() -> int:  # a loop is running here, like in a notebook cell
        return _run_sync(answer)

    assert _run_sync(answer) == 42
    assert asyncio.run(in_jupyter()) == 42


def test_import_doccheck_stays_light() -> None:
    code = "import sys, doccheck; doccheck.check_dataframe; print('prefect' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
