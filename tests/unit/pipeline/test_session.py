"""One way to open a run: the command, the notebook and the flow's tasks, given the same
settings, open the same ledger and build the same client through ``doccheck.pipeline._session``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from doccheck.pipeline import RunOptions
from doccheck.pipeline import _session as session


class _Opened(Exception):
    """Raised by the spy once the client is built: nothing is sent."""


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, str, str | None]]:
    """(what, base URL or ledger URL, key) of every ledger and client the seam opens."""
    seen: list[tuple[str, str, str | None]] = []

    class Ledger:
        def __init__(self, url: str) -> None:
            seen.append(("ledger", url, None))

        def close(self) -> None:
            pass

    def client(base_url: str, api_key: Any, **options: Any) -> Any:
        key = api_key.get_secret_value() if hasattr(api_key, "get_secret_value") else api_key
        seen.append(("client", base_url, key))
        raise _Opened

    monkeypatch.setattr(session, "Ledger", Ledger)
    monkeypatch.setattr(session, "AsyncDocCheckClient", client)
    monkeypatch.setenv("DOCCHECK_BASE_URL", "http://127.0.0.1:1/api/v1")
    monkeypatch.setenv("DOCCHECK_API_KEY", "sk_same_key")
    monkeypatch.setenv("DOCCHECK_DATABASE_URL", f"sqlite:///{tmp_path / 'ledger.db'}")
    return seen


def test_command_notebook_and_flow_open_the_same_ledger_and_client(
    opened: list[tuple[str, str, str | None]], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from doccheck.cli import app
    from doccheck.notebook import check_dataframe
    from prefect_doccheck.tasks import open_client, resolve_database_url

    # `doccheck collect` in this process opens its run's service first, as `doccheck run` does.
    result = CliRunner().invoke(app, ["collect", "--campaign", "c", "--no-prefect", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "_Opened" in result.output, result.output  # the spy stopped it
    command_opened = list(opened)
    opened.clear()
    with pytest.raises(_Opened):
        check_dataframe(pd.DataFrame({"document_id": ["d1"], "text": ["some words " * 40]}), progress=False)
    notebook_opened = list(opened)
    opened.clear()
    try:
        session.ledger_for(resolve_database_url(None))  # the ledger the flow's tasks share
        with pytest.raises(_Opened):
            open_client("http://127.0.0.1:1/api/v1", None)
    finally:
        session.close_ledgers()
    flow_opened = list(opened)

    ledger = ("ledger", f"sqlite:///{tmp_path / 'ledger.db'}", None)
    client = ("client", "http://127.0.0.1:1/api/v1", "sk_same_key")
    assert command_opened == notebook_opened == flow_opened == [ledger, client]


def test_a_run_records_its_options_in_one_shape() -> None:
    options = RunOptions.from_flat(manifest="m.csv", concurrency=4, templates=["t.txt"])
    for origin in ("command", "notebook", "flow"):
        params = options.recorded(origin, base_url="http://x/api/v1")  # type: ignore[arg-type]
        assert params["origin"] == origin and "connection" not in params
        assert params["source"]["templates"] == ["t.txt"] and params["submission"]["concurrency"] == 4
        assert set(params["output"]) >= {"min_ai_words", "ai_band_elevated", "ai_band_high", "group_by"}
    from doccheck.outputs import rules_from_params
    from doccheck.outputs.instructor import templates_of

    recorded = options.recorded("flow")
    assert templates_of(recorded) == ["t.txt"]
    assert rules_from_params(recorded) == options.output.model_dump(
        include={"min_ai_words", "ai_band_elevated", "ai_band_high", "reference_campaign", "max_false_flag_rate",
                 "group_by"}
    )  # fmt: skip
