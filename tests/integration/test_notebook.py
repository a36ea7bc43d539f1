"""The notebook API against the real emulator: DataFrames in, report-schema DataFrames out,
reruns free; the Prefect path; and ``examples/notebook.ipynb`` executed top to bottom in a
real Jupyter kernel running this project's Python."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import doccheck
from doccheck.outputs import SCHEMAS
from tests.fixtures.emulator import EmulatorHandle

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
TEXT = "Bees visit clover in the meadow at noon, and the hum carries across the field to the lane. " * 4


def _assert_report_schemas(result: Any) -> None:
    for name, schema in SCHEMAS.items():
        table = pa.Table.from_pandas(result[name], preserve_index=False)
        for f in schema:
            assert table.schema.field(f.name).type == f.type, (name, f.name, table.schema.field(f.name).type)


def test_check_dataframe_returns_report_frames_and_reruns_free(
    emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = emulator.new_account()
    monkeypatch.setenv("DOCCHECK_API_KEY", key)  # from the environment, as in a notebook
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "essay.txt").write_text(TEXT + " From a file.")
    df = pd.DataFrame({"id": [1, 2, 3], "body": [TEXT, "", TEXT + " Another one."], "group": ["x", "y", "x"]})
    params: dict[str, Any] = dict(
        text_column="body", id_column="id", products=["ai", "similarity"], metadata_columns=["group"],
        base_url=emulator.base_url, campaign=f"nb-{uuid.uuid4().hex[:8]}",
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}", grace_seconds=0, poll_interval=0.2, timeout=60,
    )  # fmt: skip
    result = doccheck.check_dataframe(df, **params)
    _assert_report_schemas(result)
    assert list(result.submissions["document_id"]) == ["1", "2", "3"]
    assert list(result.rejected["row_number"]) == [2]
    assert "row 2" in result.rejected["error_message"].iloc[0]
    assert set(result.ai_results["status"]) == {"completed"} and len(result.ai_results) == 2
    assert set(result.similarity_results["status"]) == {"completed"}
    accepted = result.submissions[result.submissions["status"] != "rejected"]
    assert list(accepted["meta_group"]) == ["x", "x"]
    charged = emulator.account_state(key)["charged_cents"]
    assert result.summary["spent_cents"] == charged > 0

    assert set(result.documents["ai_band"].dropna()) == {"too_short"}  # ~70 words < the default gate of 300
    # The page's rules as keyword arguments, like doccheck run's flags: a rerun is free whatever they are.
    again = doccheck.check_dataframe(df, **params, out_dir=tmp_path / "out", min_ai_words=10, group_by="group")
    assert again.summary["submitted"] == 0 and again.summary["spent_cents"] == 0
    assert "too_short" not in set(again.documents["ai_band"].dropna())
    assert again.report_html is not None
    assert len(list((Path(again.report_html).parent / "groups").glob("*.html"))) == 2  # x, and the rejected row's
    assert emulator.account_state(key)["charged_cents"] == charged
    assert list(again.ai_results["score"]) == list(result.ai_results["score"])

    files = doccheck.check_dataframe(
        pd.DataFrame({"document_id": ["f1"], "file": ["files/essay.txt"]}),
        **{**params, "text_column": None, "id_column": "document_id", "metadata_columns": ()},
        path_column="file",
        base_dir=tmp_path,
    )
    assert list(files.submissions["mode"]) == ["multipart"] and files.ai_results["status"].iloc[0] == "completed"


def test_a_dataframe_with_the_manifest_columns_needs_no_column_options(
    emulator: EmulatorHandle, tmp_path: Path
) -> None:
    key = emulator.new_account()
    df = pd.DataFrame({"document_id": ["d1", "d2"], "text": [TEXT, TEXT + " Second."]})
    result = doccheck.check_dataframe(
        df, products=["ai", "similarity"], base_url=emulator.base_url, api_key=key,
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}", campaign=f"nb-{uuid.uuid4().hex[:8]}", progress=False,
    )  # fmt: skip
    assert list(result.submissions["document_id"]) == ["d1", "d2"]
    assert set(result.ai_results["status"]) == {"completed"} and set(result.similarity_results["status"]) == {
        "completed"
    }
    shown = repr(result) + repr(result.summary) + "".join(repr(f.attrs) for f in result.values())
    assert key not in shown


def test_without_a_receiver_results_are_polled_from_the_start(emulator: EmulatorHandle, tmp_path: Path) -> None:
    """30 short documents, no account webhook: the run ends when the service has finished,
    not after the 120 s grace period (the wait's timeout, 90 s, is shorter than that grace:
    waiting it out would leave every product pending)."""
    key = emulator.new_account()
    with emulator.client(key) as http:
        assert http.get("/webhook").status_code == 404  # nothing will be delivered
    df = pd.DataFrame({"document_id": [f"s{i:02d}" for i in range(30)],
                       "text": [f"{TEXT} Answer number {i} about the meadow." for i in range(30)]})  # fmt: skip
    result = doccheck.check_dataframe(
        df, base_url=emulator.base_url, api_key=key, database_url=f"sqlite:///{tmp_path / 'ledger.db'}",
        campaign=f"nb-{uuid.uuid4().hex[:8]}", grace_seconds=120, timeout=90, progress=False,
    )  # fmt: skip
    # Not timed out within 90 s while the grace is 120 s: the results were polled, not waited for
    # (no wall-clock bound here: a loaded machine may take longer to poll 30 documents).
    assert result.summary["pending"] == 0 and not result.summary["timed_out"], result.summary
    assert set(result.ai_results["status"]) == {"completed"} and len(result.ai_results) == 30


@pytest.mark.prefect_server
def test_check_dataframe_with_prefect(prefect_server: Any, emulator: EmulatorHandle, tmp_path: Path) -> None:
    import os

    from prefect.client.orchestration import get_client

    key = emulator.new_account()
    before = os.environ.get("DOCCHECK_API_KEY")
    df = pd.DataFrame({"document_id": ["a", "b"], "text": [TEXT, TEXT + " B."]})
    result = doccheck.check_dataframe(
        df, text_column="text", api_key=key, base_url=emulator.base_url, use_prefect=True,
        campaign=f"nb-prefect-{uuid.uuid4().hex[:6]}", database_url=f"sqlite:///{tmp_path / 'l.db'}",
        out_dir=tmp_path / "reports", grace_seconds=0, poll_interval=0.2, timeout=60,
    )  # fmt: skip
    _assert_report_schemas(result)
    assert set(result.ai_results["status"]) == {"completed"} and len(result.ai_results) == 2
    assert result.summary["status"] == "finished"
    assert (tmp_path / "reports" / "latest" / "ai_results.parquet").is_file()
    # The key reached the flow as an unsaved credentials block: never through os.environ,
    # and masked in the flow run's parameters on the server.
    assert os.environ.get("DOCCHECK_API_KEY") == before
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs()
    assert runs and not any(key in repr(run.parameters) for run in runs)


def _notebook_tool() -> Any:
    """``docs/tools/execute_notebook.py``, the same code that writes the docs copy."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("execute_notebook", ROOT / "docs" / "tools" / "execute_notebook.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_example_notebook_runs_top_to_bottom(emulator: EmulatorHandle, tmp_path: Path) -> None:
    import nbformat

    tool = _notebook_tool()
    key = emulator.new_account()
    nb = tool.execute(
        tool.SOURCE,
        tmp_path,
        {
            "DOCCHECK_BASE_URL": emulator.base_url,
            "DOCCHECK_API_KEY": key,
            "DOCCHECK_DATABASE_URL": f"sqlite:///{tmp_path / 'notebook-ledger.db'}",
            "DOCCHECK_NOTEBOOK_CAMPAIGN": f"nb-example-{uuid.uuid4().hex[:6]}",
        },
    )  # fmt: skip  (raises CellExecutionError with the failing cell's traceback)
    outputs = "\n".join(
        o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
    )
    assert "checked 3 answers" in outputs
    assert "API key configured: True" in outputs
    assert key not in nbformat.writes(nb)  # the key itself is never shown
    live = [o for cell in nb.cells for o in cell.get("outputs", []) if "<progress" in str(o.get("data", {}))]
    assert live, "the run shows its live progress line"


def test_the_docs_copy_is_the_example_executed() -> None:
    """``docs/notebook.ipynb`` (refreshed by ``docs/tools/execute_notebook.py``) has the
    example's cells, each code cell with its outputs."""
    import nbformat

    example = nbformat.read(ROOT / "examples" / "notebook.ipynb", as_version=4)
    docs = nbformat.read(ROOT / "docs" / "notebook.ipynb", as_version=4)
    assert [c.source for c in docs.cells] == [c.source for c in example.cells], "run docs/tools/execute_notebook.py"
    assert all(c.outputs for c in docs.cells if c.cell_type == "code")
