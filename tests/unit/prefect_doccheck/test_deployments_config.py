"""deployments/prefect.yaml parses, its entrypoints import, its parameters and schedules and
triggers are valid for Prefect; serve.py builds the same two deployments (no server)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
PREFECT_YAML = ROOT / "deployments" / "prefect.yaml"


def _config() -> dict[str, Any]:
    return yaml.safe_load(PREFECT_YAML.read_text())


def _entry(entrypoint: str) -> Any:
    path, _, name = entrypoint.partition(":")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    assert (ROOT / path).is_file(), path
    return getattr(module, name)


def _serve_module() -> Any:
    spec = importlib.util.spec_from_file_location("doccheck_serve", ROOT / "deployments" / "serve.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_prefect_yaml_deployments_point_at_real_flows() -> None:
    config = _config()
    deployments = {d["name"]: d for d in config["deployments"]}
    assert set(deployments) == {"weekly-course-check", "on-check-events", "bulk-check-shard"}
    assert deployments["bulk-check-shard"]["entrypoint"] == "flows/shard.py:bulk_check_shard"
    assert deployments["weekly-course-check"]["entrypoint"] == "flows/bulk_check.py:bulk_check"
    for deployment in deployments.values():
        flow = _entry(deployment["entrypoint"])
        assert flow.name in ("bulk-check", "collect-results", "bulk-check-shard")
        accepted = set(inspect.signature(flow.fn).parameters)
        assert set(deployment.get("parameters", {})) <= accepted, deployment["name"]
        # credentials only by name
        assert not {k for k in deployment.get("parameters", {}) if "key" in k and k != "api_key_block"}
        assert deployment["work_pool"]["name"] == "doccheck-process"


def test_prefect_yaml_schedule_and_trigger_validate() -> None:
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.events import DeploymentEventTrigger

    deployments = {d["name"]: d for d in _config()["deployments"]}
    (schedule,) = deployments["weekly-course-check"]["schedules"]
    cron = CronSchedule(cron=schedule["cron"], timezone=schedule["timezone"])
    assert cron.cron == "0 6 * * 1" and cron.timezone == "Europe/London"
    (trigger_spec,) = deployments["on-check-events"]["triggers"]
    trigger = DeploymentEventTrigger(**{k: v for k, v in trigger_spec.items() if k != "type"})
    assert trigger.expect == {"doccheck.check.completed", "doccheck.check.failed"}
    assert trigger.for_each == {"doccheck.campaign"}
    assert trigger.within.total_seconds() == 60 and trigger.threshold == 1
    assert "campaign" in trigger.parameters  # type: ignore[operator]


def test_serve_builds_the_same_deployments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_MANIFEST", "/data/course.csv")
    monkeypatch.setenv("DOCCHECK_API_KEY_BLOCK", "my-key-block")
    monkeypatch.setenv("DOCCHECK_API_KEY", "sk_never_a_parameter")
    serve = _serve_module()
    bulk, collect = serve.build_deployments()
    assert bulk.name == "weekly-course-check" and bulk.entrypoint == "prefect_doccheck.flows.bulk_check.bulk_check"
    assert bulk.parameters["source"]["manifest"] == "/data/course.csv"
    assert bulk.parameters["api_key_block"] == "my-key-block"
    assert "sk_never_a_parameter" not in repr(bulk.parameters)
    (schedule,) = bulk.schedules
    assert schedule.schedule.cron == "0 6 * * 1" and schedule.schedule.timezone == "Europe/London"
    assert collect.entrypoint == "prefect_doccheck.flows.collect_results.collect_results"
    (trigger,) = collect.triggers
    assert trigger.expect == {"doccheck.check.completed", "doccheck.check.failed"}
    assert trigger.match.root == {"prefect.resource.id": "doccheck.check.*"}
