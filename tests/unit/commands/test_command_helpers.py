"""What the commands share and parse: one-line errors, the run's summary tables, ``--older-than``.

Unit tests of the commands' private modules (``_runner``, ``_purge_data``), no service.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from doccheck.commands._purge_data import parse_age
from doccheck.pipeline import RunSummary


def test_cli_error_lines_are_single_and_safe() -> None:
    from doccheck.client import AuthenticationError, ConfigurationError, NetworkError
    from doccheck.commands._runner import describe_error
    from doccheck.sources.manifest import ManifestError

    assert describe_error(ConfigurationError("no API key: set DOCCHECK_API_KEY")) == "no API key: set DOCCHECK_API_KEY"
    assert describe_error(ManifestError("manifest x.csv:\n  missing column")) == "manifest x.csv: missing column"
    line = describe_error(AuthenticationError("unknown API key", status_code=401, code="unauthorized"))
    assert line.startswith("AuthenticationError: 401 unauthorized") and "\n" not in line
    assert describe_error(NetworkError("GET /checks failed")).startswith("the service did not answer")


def test_summary_and_rejection_tables_render(tmp_path: Path) -> None:
    from rich.console import Console

    from doccheck.commands._runner import rejections_table, summary_table

    summary = RunSummary(
        status="finished", campaign="c1", run_id="r1", documents=2, submitted=2, spent_cents=123,
        products={"ai": {"completed": 2}}, report_dir="reports/x", latest_dir="reports/latest",
        rejections=[{"row": 3, "document_id": "d3", "field": "text", "code": "empty_document", "reason": "row 3: empty"}],
    )  # fmt: skip
    console = Console(record=True, width=120)
    console.print(summary_table(summary))
    console.print(rejections_table(summary))
    text = console.export_text()
    assert "$1.23" in text and "completed 2" in text and "row 3: empty" in text and "reports/x" in text
    assert rejections_table(RunSummary(status="planned", campaign="c")) is None


@pytest.mark.parametrize(("given", "age"), [("30", timedelta(days=30)), ("30d", timedelta(days=30)),
                                            ("12h", timedelta(hours=12)), ("0.5d", timedelta(hours=12))])  # fmt: skip
def test_parse_age(given: str, age: timedelta) -> None:
    assert parse_age(given) == age


@pytest.mark.parametrize("bad", ["", "soon", "-3", "3w", "1e3"])
def test_parse_age_refuses(bad: str) -> None:
    with pytest.raises(ValueError, match="--older-than"):
        parse_age(bad)
