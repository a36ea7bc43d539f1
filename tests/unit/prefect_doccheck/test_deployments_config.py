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
    """The flow an entrypoint names: a file of this checkout (the process pool), or a module path
    of the installed package (the container pools), imported as Prefect imports it."""
    from prefect.flows import load_flow_from_entrypoint

    if ".py:" in entrypoint:
        path, _, name = entrypoint.partition(":")
        assert (ROOT / path).is_file(), path
        return getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), name)
    return load_flow_from_entrypoint(entrypoint, use_placeholder_flow=False)


def _serve_module() -> Any:
    spec = importlib.util.spec_from_file_location("doccheck_serve", ROOT / "deployments" / "serve.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_prefect_yaml_deployments_point_at_real_flows() -> None:
    config = _config()
    deployments = {d["name"]: d for d in config["deployments"]}
    names = ("weekly-course-check", "on-check-events", "bulk-check-shard")
    expected = {f"{name}{suffix}" for name in names for suffix in ("", "-docker", "-kubernetes")}
    assert set(deployments) == expected | {"bulk-check-shard-installed"}
    assert deployments["bulk-check-shard"]["entrypoint"] == "flows/shard.py:bulk_check_shard"
    # the shard for process workers that share nothing with the checkout: the installed package
    installed = deployments["bulk-check-shard-installed"]
    assert installed["entrypoint"] == "prefect_doccheck.flows.shard.bulk_check_shard" and installed["pull"] == []
    assert deployments["weekly-course-check"]["entrypoint"] == "flows/bulk_check.py:bulk_check"
    for deployment in deployments.values():
        flow = _entry(deployment["entrypoint"])
        assert flow.name in ("bulk-check", "collect-results", "bulk-check-shard")
        accepted = set(inspect.signature(flow.fn).parameters)
        assert set(deployment.get("parameters", {})) <= accepted, deployment["name"]
        # credentials only by name
        assert not {k for k in deployment.get("parameters", {}) if "key" in k and k != "api_key_block"}
        pool = deployment["name"].rpartition("-")[2] if deployment["name"].endswith(("-docker", "-kubernetes")) else ""
        assert deployment["work_pool"]["name"] == f"doccheck-{pool or 'process'}"


def test_container_deployments_load_the_installed_package_and_name_blocks_only() -> None:
    """No pull step (the top-level one sets the deployer's folder), a module-path entrypoint
    (imported from any working directory), the image and the settings as job variables."""
    from sqlalchemy.engine import make_url

    from doccheck.config import fields

    secret = {f.env for f in fields() if f.secret}
    for deployment in _config()["deployments"]:
        if deployment["work_pool"]["name"] == "doccheck-process":
            continue
        assert deployment["pull"] == [], deployment["name"]
        assert deployment["entrypoint"].startswith("prefect_doccheck.flows.") and ":" not in deployment["entrypoint"]
        variables = deployment["work_pool"]["job_variables"]
        assert variables["image"] == "registry.example.org/doccheck:0.1.0"
        env = variables["env"]
        assert {"DOCCHECK_DATABASE_URL", "DOCCHECK_CREDENTIALS_BLOCK", "DOCCHECK_STORAGE_BLOCK"} <= set(env)
        assert not set(env) & secret and make_url(env["DOCCHECK_DATABASE_URL"]).password is None
        kind = deployment["work_pool"]["name"].removeprefix("doccheck-")
        assert env["DOCCHECK_SHARD_DEPLOYMENT"] == f"bulk-check-shard/bulk-check-shard-{kind}"
        manifest = deployment.get("parameters", {}).get("source", {}).get("manifest", "s3://")
        assert manifest.startswith("s3://")


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


@pytest.mark.parametrize("manifest", ["s3://term-data/course-a/manifest.csv", "gs://term/m.parquet"])
def test_serve_gives_the_scheduled_check_a_bucket_manifest_as_written(
    monkeypatch: pytest.MonkeyPatch, manifest: str
) -> None:
    """DOCCHECK_MANIFEST at a URL reaches the deployment's parameters unchanged (as a Path it
    was ``s3:/term-data/...``, which no store opens); a relative path is made absolute."""
    monkeypatch.setenv("DOCCHECK_MANIFEST", manifest)
    assert _serve_module().bulk_check_parameters()["source"]["manifest"] == manifest
    monkeypatch.setenv("DOCCHECK_MANIFEST", "course/manifest.csv")
    assert _serve_module().bulk_check_parameters()["source"]["manifest"] == str(Path("course/manifest.csv").resolve())
