"""Flows: the pure helpers that name runs, cut batches and shape the summary; no key parameter."""

from __future__ import annotations

import inspect
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from doccheck.outputs import escape_markdown, run_label
from doccheck.pipeline import RunSummary, SourceOptions, as_list
from prefect_doccheck.flows.bulk_check import bulk_check
from prefect_doccheck.flows.collect_results import collect_results


def test_campaign_defaults_to_manifest_stem() -> None:
    assert SourceOptions(manifest="/data/essays-2026.csv").campaign_name == "essays-2026"
    assert SourceOptions(manifest="/data/essays.csv", campaign="  ").campaign_name == "essays"
    assert SourceOptions(manifest="/data/essays.csv", campaign="HIST101-A3").campaign_name == "HIST101-A3"


def test_run_label_is_safe_and_unique_per_run() -> None:
    now = datetime(2026, 11, 22, 10, 0, 0, tzinfo=UTC)
    label = run_label("History 101 / essay #3", "0123456789abcdef", now)
    assert re.fullmatch(r"[A-Za-z0-9._-]+", label)
    assert label == "History-101-essay-3-20261122T100000000Z-01234567"
    assert run_label("...", "abcdef0123", now).startswith("run-")


def test_products_accept_lists_and_strings() -> None:
    assert as_list("ai,similarity") == ["ai", "similarity"]
    assert as_list("ai;similarity") == ["ai", "similarity"]
    assert as_list(["ai", " similarity "]) == ["ai", "similarity"]
    assert as_list(None) == []


def test_flows_never_take_the_api_key_as_a_parameter() -> None:
    for fl in (bulk_check, collect_results):
        params = inspect.signature(fl.fn).parameters
        assert not [p for p in params if "key" in p and p != "api_key_block"], params
        assert "api_key_block" in params and "credentials" in params


def test_bulk_check_takes_the_option_groups() -> None:
    # One options model (doccheck.pipeline._options): the flow's parameters are its groups, so the
    # UI shows one form section per group and the defaults live in one place.
    params = inspect.signature(bulk_check.fn).parameters
    assert list(params) == [
        "source", "submission", "waiting", "output", "connection", "credentials", "api_key_block", "dry_run",
    ]  # fmt: skip
    assert params["submission"].default.batch_size == 100
    schema = bulk_check.parameters.model_dump()["properties"]
    assert {"source", "submission", "waiting", "output", "connection"} <= set(schema)


def test_summary_markdown_has_no_secrets_and_the_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    # The summary is a flow's return value and an artifact: it must have no field a key or a
    # signing secret could go into, and building it must not pick one up from the environment.
    key, whsec = "sk_test_SUMMARYCANARY_1", "whsec_SUMMARYCANARY_2"
    monkeypatch.setenv("DOCCHECK_API_KEY", key)
    monkeypatch.setenv("DOCCHECK_WEBHOOK_SECRET", whsec)
    secret_words = ("key", "secret", "token", "password", "auth")
    assert [f for f in RunSummary.model_fields if any(w in f for w in secret_words)] == []
    summary = RunSummary(
        status="finished",
        campaign="c1",
        run_id="r1",
        documents=3,
        rejected=1,
        submitted=3,
        products={"ai": {"completed": 3}},
        spent_cents=9,
        report_dir="reports/x",
    )
    md = summary.as_markdown()
    assert "| rows rejected | 1 |" in md
    assert "| ai | completed 3 |" in md
    assert escape_markdown("reports/x") in md  # values are markdown-escaped
    for text in (md, summary.model_dump_json()):
        assert key not in text and whsec not in text


def test_stale_local_server_state_is_ignored(tmp_path: Path) -> None:
    import json

    from doccheck.commands import free_port, port_is_free, running_prefect_server, stop_prefect_server

    assert running_prefect_server(tmp_path) is None  # no state file
    (tmp_path / "doccheck-server.json").write_text(json.dumps({"pid": 2**22 + 7, "api_url": "http://127.0.0.1:9/api"}))
    assert running_prefect_server(tmp_path) is None  # the process is gone
    assert stop_prefect_server(tmp_path) is False
    assert not (tmp_path / "doccheck-server.json").exists()
    assert port_is_free(free_port())
