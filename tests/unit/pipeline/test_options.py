"""One options model (doccheck.pipeline._options): the flow, the CLI and the notebook say what a run is
the same way, with defaults declared once."""

from __future__ import annotations

import inspect

import pytest
import typer
from pydantic import ValidationError

from doccheck.commands import run as run_command
from doccheck.notebook import acheck_dataframe, check_dataframe
from doccheck.pipeline import DEFAULTS, RunOptions, SourceOptions, SubmissionOptions, option_error


def test_flat_names_land_in_their_groups() -> None:
    options = RunOptions.from_flat(
        manifest="m.csv", products="ai,similarity", concurrency=16, wait_timeout=60, out_dir="out",
        download="pdf", database_url="sqlite:///x.db", dry_run=True, campaign=None,
    )  # fmt: skip
    assert options.source.products == ["ai", "similarity"] and options.source.campaign_name == "m"
    assert options.submission.concurrency == 16 and options.submission.batch_size == 100
    assert options.waiting.timeout == 60 and options.output.download == ["pdf"]
    assert options.connection.database_url == "sqlite:///x.db" and options.dry_run


def test_flow_parameters_round_trip() -> None:
    options = RunOptions.from_flat(manifest="m.csv", max_spend_cents=500, grace_seconds=0)
    params = options.flow_parameters()
    assert set(params) == {"source", "submission", "waiting", "output", "connection", "dry_run"}
    assert RunOptions(**params) == options


def test_bad_options_are_named() -> None:
    with pytest.raises(TypeError, match="unknown run option 'concurency'"):
        RunOptions.from_flat(manifest="m.csv", concurency=3)
    with pytest.raises(ValidationError) as bad:
        RunOptions.from_flat(manifest="m.csv", concurrency=0, download="pdf,sigh", products="ai,plagiarism")
    line = option_error(bad.value)
    assert "concurrency" in line and "greater than or equal to 1" in line
    assert "unknown file kind 'sigh'" in line and "plagiarism" in line
    with pytest.raises(ValidationError, match="extra"):
        SubmissionOptions(concurency=3)  # type: ignore[call-arg]


def test_groups_are_frozen() -> None:
    with pytest.raises(ValidationError):
        DEFAULTS.submission.concurrency = 3  # type: ignore[misc]
    assert SourceOptions(manifest="m.csv", products=[]).products == ["ai"]  # empty: the default product


def _cli_default(name: str) -> object:
    default = inspect.signature(run_command).parameters[name].default
    return default.default if isinstance(default, typer.models.OptionInfo) else default


@pytest.mark.parametrize("fn", [check_dataframe, acheck_dataframe])
def test_cli_and_notebook_defaults_are_the_models(fn: object) -> None:
    flat = {
        "concurrency": DEFAULTS.submission.concurrency,
        "batch_size": DEFAULTS.submission.batch_size,
        "submit_deadline": DEFAULTS.submission.submit_deadline,
        "wait_timeout": DEFAULTS.waiting.timeout,
        "grace_seconds": DEFAULTS.waiting.grace_seconds,
        "poll_interval": DEFAULTS.waiting.poll_interval,
        "wait": DEFAULTS.waiting.wait,
    }
    for name, value in flat.items():
        assert _cli_default(name) == value, name
    params = inspect.signature(fn).parameters  # type: ignore[arg-type]
    notebook = {"concurrency": "concurrency", "wait_timeout": "timeout", "grace_seconds": "grace_seconds",
                "poll_interval": "poll_interval", "wait": "wait"}  # fmt: skip
    for name, arg in notebook.items():
        assert params[arg].default == flat[name], arg
    assert list(params["products"].default) == DEFAULTS.source.products


def test_the_ai_rules_are_cli_flags_with_the_models_defaults_and_checked_before_sending() -> None:
    for name in ("min_ai_words", "ai_band_elevated", "ai_band_high"):
        assert _cli_default(name) == getattr(DEFAULTS.output, name), name
    assert _cli_default("max_false_flag_rate") is None and _cli_default("reference_campaign") is None
    options = RunOptions.from_flat(manifest="m.csv", min_ai_words=150, ai_band_elevated=0.6, ai_band_high=0.9,
                                   reference_campaign="essays-2021", max_false_flag_rate=0.01)  # fmt: skip
    assert (options.output.min_ai_words, options.output.ai_band_high, options.output.max_false_flag_rate) == (
        150, 0.9, 0.01,
    )  # fmt: skip
    assert RunOptions(**options.flow_parameters()) == options  # the flow takes them as parameters
    with pytest.raises(ValidationError, match="ai_band_elevated .0.9. must not be above ai_band_high .0.6."):
        RunOptions.from_flat(manifest="m.csv", ai_band_elevated=0.9, ai_band_high=0.6)
    with pytest.raises(ValidationError, match="max_false_flag_rate needs a reference_campaign"):
        RunOptions.from_flat(manifest="m.csv", max_false_flag_rate=0.01)
