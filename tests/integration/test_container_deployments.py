"""``prefect deploy --all --prefect-file deployments/prefect.yaml`` on the tests' Prefect server, with a
process, a Docker and a Kubernetes work pool made from the base job templates of prefect-docker and
prefect-kubernetes (installed for the tests: the ``dev`` extra). No worker, no Docker daemon and no
cluster: what is checked is what a worker of each pool would start, resolved by the pool's own job
configuration class as the worker resolves it (``resolve_for_flow_run``): the image, the command,
the environment (settings naming blocks and addresses, no secret), and for Kubernetes the job
manifest. One flow run of a container deployment is then executed the way the container would
execute it (``prefect flow-run execute``, in an empty working directory, with that environment
only): the flow loads from the installed package and reads the settings it was given.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doccheck.config import fields

pytestmark = [pytest.mark.integration, pytest.mark.prefect_server]

ROOT = Path(__file__).resolve().parents[2]
POOLS = {"process": "doccheck-process", "docker": "doccheck-docker", "kubernetes": "doccheck-kubernetes"}
FLOWS = {
    "bulk-check-shard": "prefect_doccheck.flows.shard.bulk_check_shard",
    "weekly-course-check": "prefect_doccheck.flows.bulk_check.bulk_check",
    "on-check-events": "prefect_doccheck.flows.collect_results.collect_results",
}
FLOW_NAMES = {"bulk-check-shard": "bulk-check-shard", "weekly-course-check": "bulk-check",
              "on-check-events": "collect-results"}  # fmt: skip
#: The settings a container is given by its job variables: names and addresses only.
SETTINGS = {
    "DOCCHECK_DATABASE_URL",
    "DOCCHECK_CREDENTIALS_BLOCK",
    "DOCCHECK_STORAGE_BLOCK",
    "DOCCHECK_SHARD_DEPLOYMENT",
}


#: The ledger's password as docs/prefect.md has the Kubernetes pool give it: a Secret's key, not a value.
PGPASSWORD = {"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": "doccheck-ledger", "key": "password"}}}


def _base_job_template(kind: str) -> dict[str, Any]:
    """The package's default template; Kubernetes' with the ledger's password from a Secret, as
    docs/prefect.md edits it (the container's env list in place of "{{ env }}")."""
    if kind == "docker":
        from prefect_docker.worker import DockerWorker

        return DockerWorker.get_default_base_job_template()
    from prefect_kubernetes.worker import KubernetesWorker

    template = KubernetesWorker.get_default_base_job_template()
    (container,) = template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]["containers"]
    assert container["env"] == "{{ env }}"
    container["env"] = [PGPASSWORD]
    return template


@pytest.fixture(scope="module")
def deployed(prefect_server: Any) -> Iterator[dict[str, Any]]:
    """The three pools, then every deployment of prefect.yaml deployed at once (one `prefect deploy`)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name=POOLS["process"], type="process"), overwrite=True)
        for kind in ("docker", "kubernetes"):
            pool = WorkPoolCreate(name=POOLS[kind], type=kind, base_job_template=_base_job_template(kind))
            client.create_work_pool(pool, overwrite=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCCHECK_")}
    env.update(
        {"PREFECT_API_URL": prefect_server.api_url, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PWD": str(ROOT)}
    )
    done = subprocess.run(
        [sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with get_client(sync_client=True) as client:
        yield {
            f"{name}{'' if kind == 'process' else '-' + kind}": client.read_deployment_by_name(
                f"{FLOW_NAMES[name]}/{name}{'' if kind == 'process' else '-' + kind}"
            )
            for name in FLOWS
            for kind in POOLS
        }


def test_the_process_pool_runs_from_the_deployers_folder(deployed: dict[str, Any]) -> None:
    bulk, collect = deployed["weekly-course-check"], deployed["on-check-events"]
    assert bulk.work_pool_name == "doccheck-process" and bulk.entrypoint == "flows/bulk_check.py:bulk_check"
    assert bulk.parameters["api_key_block"] == "doccheck-api-key"
    (schedule,) = bulk.schedules
    assert schedule.schedule.cron == "0 6 * * 1" and schedule.schedule.timezone == "Europe/London"
    assert bulk.pull_steps and bulk.pull_steps[0]["prefect.deployments.steps.set_working_directory"][
        "directory"] == str(ROOT)  # fmt: skip
    assert collect.work_pool_name == "doccheck-process"


@pytest.mark.parametrize("kind", ["docker", "kubernetes"])
def test_container_deployments_load_the_installed_package_with_settings_only(
    deployed: dict[str, Any], kind: str
) -> None:
    for name, entrypoint in FLOWS.items():
        deployment = deployed[f"{name}-{kind}"]
        assert deployment.work_pool_name == POOLS[kind], name
        assert deployment.entrypoint == entrypoint, name
        assert not deployment.pull_steps and deployment.path is None, name  # no folder of the deployer's
        variables = deployment.job_variables
        assert variables["image"] == "registry.example.org/doccheck:0.1.0"
        assert set(variables["env"]) == SETTINGS
        assert variables["env"]["DOCCHECK_SHARD_DEPLOYMENT"] == f"bulk-check-shard/bulk-check-shard-{kind}"
        _no_secret(variables["env"], deployment.parameters)
    weekly = deployed[f"weekly-course-check-{kind}"]
    assert weekly.parameters["source"]["manifest"] == "s3://term-data/course-a/manifest.csv"
    assert weekly.parameters["output"]["out_dir"] == "s3://term-data/reports"
    assert "api_key_block" not in weekly.parameters and "credentials" not in weekly.parameters
    (schedule,) = weekly.schedules
    assert schedule.schedule.cron == "0 6 * * 1"


def _no_secret(env: dict[str, str], parameters: dict[str, Any]) -> None:
    """Every DOCCHECK_* variable given is a setting that is not a secret; the ledger's URL has no
    password; no parameter is named after a key or a secret."""
    from sqlalchemy.engine import make_url

    by_env = {f.env: f for f in fields()}
    for name in env:
        if name.startswith("DOCCHECK_"):
            assert name in by_env and not by_env[name].secret, name
    assert make_url(env["DOCCHECK_DATABASE_URL"]).password is None
    assert not [k for k in str(parameters).lower().split("'") if k.endswith(("key", "secret", "password"))]


def _flow_run_of(deployment: Any, parameters: dict[str, Any] | None = None) -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.create_flow_run_from_deployment(deployment.id, parameters=parameters, tags=["containers-test"])


def _configuration(kind: str, flow_run: Any) -> Any:
    """The job configuration a worker of this pool would start the flow run with."""
    from prefect.client.orchestration import get_client
    from prefect.utilities.asyncutils import run_coro_as_sync

    if kind == "docker":
        from prefect_docker.worker import DockerWorkerJobConfiguration as Configuration
    else:
        from prefect_kubernetes.worker import KubernetesWorkerJobConfiguration as Configuration

    async def resolve() -> Any:
        async with get_client() as client:
            pool = await client.read_work_pool(POOLS[kind])
            return await Configuration.resolve_for_flow_run(
                flow_run, client=client, work_pool=pool, worker_name=f"test-{kind}-worker"
            )

    return run_coro_as_sync(resolve())


def test_a_docker_worker_would_start_the_image_with_the_settings(deployed: dict[str, Any]) -> None:
    flow_run = _flow_run_of(deployed["weekly-course-check-docker"])
    config = _configuration("docker", flow_run)
    assert config.image == "registry.example.org/doccheck:0.1.0"
    assert config.command == "prefect flow-run execute"
    assert config.image_pull_policy == "Always" and config.auto_remove is True
    assert set(config.env) >= SETTINGS and config.env["PREFECT__FLOW_RUN_ID"] == str(flow_run.id)
    assert not config.volumes
    _no_secret(config.env, flow_run.parameters)


def test_a_kubernetes_worker_would_start_a_job_of_the_image_with_the_settings(deployed: dict[str, Any]) -> None:
    shard = {
        "run_id": uuid.uuid4().hex,
        "shard": 0,
        "shards": 2,
        "manifest": "s3://term-data/course-a/manifest.csv",
        "campaign": "weekly-course-check",
    }  # fmt: skip  (as the parent passes them)
    flow_run = _flow_run_of(deployed["bulk-check-shard-kubernetes"], shard)
    config = _configuration("kubernetes", flow_run)
    manifest = config.job_manifest
    assert manifest["metadata"]["namespace"] == "doccheck"
    pod = manifest["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["serviceAccountName"] == "doccheck" and manifest["spec"]["ttlSecondsAfterFinished"] == 3600
    assert container["image"] == "registry.example.org/doccheck:0.1.0" and container["imagePullPolicy"] == "Always"
    assert container["args"] == ["prefect", "flow-run", "execute"]
    assert container["resources"]["limits"]["memory"] == "2Gi"
    *plain, password = container["env"]  # the job variables' env first, the pool's Secret reference after
    assert password == PGPASSWORD
    env = {item["name"]: item["value"] for item in plain}
    assert set(env) >= SETTINGS and env["PREFECT__FLOW_RUN_ID"] == str(flow_run.id)
    _no_secret(env, flow_run.parameters)


def test_the_container_command_loads_the_flow_from_the_package_in_an_empty_folder(
    deployed: dict[str, Any], tmp_path: Path
) -> None:
    """`prefect flow-run execute` as the container runs it: an empty working directory and HOME, the
    job configuration's environment and nothing of this checkout's. The flow loads from the
    installed package and reads DOCCHECK_STORAGE_BLOCK first: no block of that name was saved on this
    server, so it fails naming the block (nothing else is reached: no ledger, no service, no bucket)."""
    from prefect.client.orchestration import get_client

    flow_run = _flow_run_of(deployed["weekly-course-check-kubernetes"])
    config = _configuration("kubernetes", flow_run)
    (container,) = config.job_manifest["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item["value"] for item in container["env"] if "value" in item}
    env |= {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PREFECT_HOME": str(tmp_path / ".prefect")}
    work = tmp_path / "work"
    work.mkdir()
    args = container["args"]
    done = subprocess.run(
        [str(Path(sys.executable).parent / args[0]), *args[1:]],
        cwd=work, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert "no DocCheckStorage block named 'doccheck-storage'" in output, output[-3000:]
    # No pull step ran. Prefect 3.8.8 runs every flow run in a temporary workspace, and without pull
    # steps it copies the process's working directory (the image's empty WORKDIR) into it
    # ("Downloading flow code from storage at <cwd>"); a module path is then imported from the
    # installed package, nothing of the folder is read and nothing written to it.
    assert "pull step" not in output, output[-3000:]
    assert f"Downloading flow code from storage at {str(work)!r}" in output, output[-3000:]
    assert list(work.iterdir()) == []
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(flow_run.id).state
    assert state is not None and state.is_failed(), state
