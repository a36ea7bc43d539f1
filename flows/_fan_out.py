"""Fan a recorded run out to N shard flow runs on a work pool, follow them, retry the lost.

Why ``run_deployment``: the shards then run wherever the pool's workers are (processes
on many machines, Docker, Kubernetes), show in the UI as subflow runs of the parent, and
an ``idempotency_key`` per parent run, run and shard means a retried parent finds its
children instead of doubling them. The parent does not wait inside ``run_deployment``
(``timeout=0``): it follows all children at once and acts on each.

A shard is retried (a new flow run, idempotency key suffixed ``:retry-K``) when its run
ends FAILED, CRASHED or CANCELLED, or when it is *lost*: RUNNING or PENDING on a worker
that stopped sending heartbeats (its machine died with it; Prefect itself would show it
RUNNING forever), or PENDING under no worker's name for as long (its worker died between
taking it and naming itself). The lost run is marked CRASHED first so the UI tells the
truth. A shard still SCHEDULED after ``DOCCHECK_SHARD_PICKUP_SECONDS`` (default 600) was
taken by no worker of its pool (none running, or all full): it is cancelled and started
again, and once out of retries the parent fails naming the shard and the pool, instead of
waiting for ever.
Re-running is safe because the ledger's claims and reconciliation keep every key to one
check, whatever the old run managed to send.

Results come from each shard's result artifact (see ``flows/shard.py``), so the parent
needs no shared result storage with the workers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from prefect import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    ArtifactFilterType,
)
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.deployments import arun_deployment
from prefect.exceptions import ObjectNotFound
from prefect.states import Cancelled, Crashed

from doccheck.config import load_settings
from doccheck.errors import ShardsFailed
from doccheck.pipeline import BatchResult, ShardConfigError, SubmissionOptions
from prefect_doccheck.flows.shard import RESULT_FIELDS, SHARD_RESULT_DESCRIPTION

__all__ = ["run_shards", "shard_deployment_name"]

log = logging.getLogger(__name__)

_FAILED = {StateType.FAILED, StateType.CRASHED, StateType.CANCELLED}
_ACTIVE_ON_WORKER = {StateType.RUNNING, StateType.PENDING, StateType.CANCELLING}


def shard_deployment_name(name: str | None = None) -> str:
    """The shard deployment: ``name``, else the ``shards.deployment`` setting
    (``DOCCHECK_SHARD_DEPLOYMENT``)."""
    return (name or load_settings().shards.deployment).strip()


@dataclass
class _Shard:
    number: int
    attempts: int = 0
    flow_run_id: UUID | None = None
    result: dict[str, int] | None = None
    error: str | None = None
    history: list[str] = field(default_factory=list)
    started_at: float = 0.0  # time.monotonic() of its latest flow run's start


def _parent_id() -> str:
    from prefect.runtime import flow_run

    return str(flow_run.get_id() or "local")


async def _start(shard: _Shard, *, deployment: str, run_id: str, shards: int, parameters: dict[str, Any]) -> None:
    key = f"{_parent_id()}:{run_id}:shard-{shard.number}"
    if shard.attempts:
        key += f":retry-{shard.attempts}"
    try:
        flow_run = await arun_deployment(
            name=deployment,
            parameters={**parameters, "run_id": run_id, "shard": shard.number, "shards": shards},
            idempotency_key=key,
            as_subflow=True,
            timeout=0,
            tags=[f"doccheck-run:{run_id}", f"shard:{shard.number}"],
        )
    except ObjectNotFound:
        raise ShardConfigError(
            f"the Prefect server has no deployment {deployment!r}: deploy it from the project folder "
            "(prefect deploy --prefect-file deployments/prefect.yaml --name bulk-check-shard), start workers "
            "on its pool, and set PREFECT_API_URL to that server (or DOCCHECK_SHARD_DEPLOYMENT to its name)"
        ) from None
    shard.flow_run_id = flow_run.id
    shard.history.append(str(flow_run.id))
    shard.started_at = time.monotonic()


async def _lost(client: Any, flow_run: FlowRun, stale_after: float | None) -> str | None:
    """Why ``flow_run`` is lost, or None while its worker is alive (or none took it yet).

    Lost: its worker stopped sending heartbeats, or left its pool. A worker moves a run to
    PENDING *before* it labels the run with its name, so a worker killed in between leaves
    a PENDING run that names no worker, for ever: such a run is judged by its own age."""
    worker_name = (flow_run.labels or {}).get("prefect.worker.name")
    pool = flow_run.work_pool_name
    if not pool:
        return None  # not on a work pool: nothing to judge
    state = flow_run.state
    if not worker_name:
        if state is None or state.type != StateType.PENDING:
            return None  # no worker to ask about, and not waiting on one
        workers = await client.read_workers_for_work_pool(pool)
        intervals = [w.heartbeat_interval_seconds for w in workers if w.heartbeat_interval_seconds]
        limit = stale_after if stale_after is not None else lost_after(max(intervals, default=None))
        if _age(state.timestamp) <= limit:
            return None
        return f"lost (PENDING for over {limit:g} s and no worker ever named itself on it)"
    workers = await client.read_workers_for_work_pool(pool)
    worker = next((w for w in workers if w.name == worker_name), None)
    if worker is None:
        return f"lost (its worker {worker_name!r} is gone from pool {pool!r})"
    if worker.last_heartbeat_time is None:
        return None
    limit = stale_after if stale_after is not None else lost_after(worker.heartbeat_interval_seconds)
    if _age(worker.last_heartbeat_time) <= limit:
        return None
    return f"lost (its worker {worker_name!r} stopped sending heartbeats)"


def _age(moment: datetime) -> float:
    return (datetime.now(UTC) - moment).total_seconds()


def lost_after(heartbeat_interval_seconds: float | None) -> float:
    """Seconds without a worker heartbeat after which its running shards count as lost:
    three heartbeat intervals (Prefect's own rule for marking a worker offline), and at
    least ``DOCCHECK_SHARD_LOST_AFTER_SECONDS`` (default 60): a busy machine delays
    heartbeats, and a shard wrongly called lost is run twice (safe, but wasted work)."""
    floor = load_settings().shards.lost_after_seconds
    return max(3 * float(heartbeat_interval_seconds or 30), floor)


async def _read_result(client: Any, flow_run_id: UUID) -> dict[str, int] | None:
    artifacts = await client.read_artifacts(
        artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]), type=ArtifactFilterType(any_=["table"])
        )
    )
    for artifact in artifacts:
        if artifact.description != SHARD_RESULT_DESCRIPTION:
            continue
        data = artifact.data
        rows = json.loads(data) if isinstance(data, str) else data
        if isinstance(rows, list) and rows and isinstance(rows[0], dict):
            return {k: int(rows[0].get(k, 0) or 0) for k in RESULT_FIELDS}
    return None


async def run_shards(
    *,
    run_id: str,
    shards: int,
    parameters: dict[str, Any],
    deployment: str | None = None,
    max_retries: int = 2,
    poll_interval: float = 2.0,
    stale_after: float | None = None,
) -> BatchResult:
    """Run shards ``0..shards-1`` of ``run_id`` as flow runs of ``deployment`` and merge their results.

    ``parameters``: the shard flow's parameters other than run_id/shard/shards (names and
    URLs only, never the key). ``max_retries``: new runs per shard after a failure or a
    loss. ``stale_after``: seconds without a worker heartbeat after which a running shard
    is lost (default :func:`lost_after` of that worker's heartbeat interval); a shard no worker
    took within ``DOCCHECK_SHARD_PICKUP_SECONDS`` is started again too. Raises
    :class:`ShardsFailed` when shards are still failed after their retries (once every
    other shard has finished, so their work is kept).
    """
    name = shard_deployment_name(deployment)
    pickup = load_settings().shards.pickup_seconds
    state = [_Shard(k) for k in range(shards)]
    for shard in state:
        await _start(shard, deployment=name, run_id=run_id, shards=shards, parameters=parameters)
    active = list(state)
    async with get_client() as client:
        while active:
            await asyncio.sleep(poll_interval)
            for shard in list(active):
                assert shard.flow_run_id is not None
                flow_run = await client.read_flow_run(shard.flow_run_id)
                kind = flow_run.state.type if flow_run.state else None
                if kind == StateType.COMPLETED:
                    shard.result = await _read_result(client, shard.flow_run_id) or {}
                    active.remove(shard)
                    continue
                reason: str | None = None
                if kind in _FAILED:
                    reason = f"{flow_run.state.name if flow_run.state else kind}"
                elif kind in _ACTIVE_ON_WORKER and (reason := await _lost(client, flow_run, stale_after)):
                    await client.set_flow_run_state(
                        shard.flow_run_id, Crashed(message="doccheck: the worker running this shard is gone"),
                        force=True,
                    )  # fmt: skip
                elif kind == StateType.SCHEDULED and time.monotonic() - shard.started_at > pickup:
                    reason = (f"not taken by any worker of pool {flow_run.work_pool_name!r} within {pickup:g} s "
                              "(DOCCHECK_SHARD_PICKUP_SECONDS; are its workers running?)")  # fmt: skip
                    await client.set_flow_run_state(
                        shard.flow_run_id, Cancelled(message="doccheck: no worker took this shard"), force=True
                    )
                if reason is None:
                    continue
                if shard.attempts >= max_retries:
                    shard.error = f"shard {shard.number}: {reason} after {shard.attempts + 1} runs"
                    active.remove(shard)
                    continue
                log.warning("shard %d of run %s %s; starting it again", shard.number, run_id, reason)
                shard.attempts += 1
                await _start(shard, deployment=name, run_id=run_id, shards=shards, parameters=parameters)
    total = BatchResult()
    for shard in state:
        if shard.result:
            total = total.merge(BatchResult(**shard.result))  # type: ignore[arg-type] # counters only
    failed = [s.error for s in state if s.error]
    if failed:
        raise ShardsFailed(
            "; ".join(failed) + f". Their documents are unsent; run the same command again to continue (run {run_id})"
        )
    return total


def credentials_name(key_source: Any) -> tuple[str | None, str | None]:
    """``(credentials, api_key_block)`` parameters for the shards: block *names* only.

    A ``DocCheckCredentials`` object that was never saved has no name a worker could load,
    and its key must not become a parameter: refused with the fix."""
    from doccheck.client import ConfigurationError
    from prefect_doccheck.credentials import DocCheckCredentials

    if isinstance(key_source, DocCheckCredentials):
        name = getattr(key_source, "_block_document_name", None)
        if not name:
            raise ConfigurationError(
                "shards load the credentials on their workers by block name: save the DocCheckCredentials "
                "block (.save('doccheck')) and pass its name, or give the workers DOCCHECK_API_KEY"
            )
        return str(name), None
    if isinstance(key_source, str) and key_source:
        return None, key_source
    return None, None


async def submit_sharded(
    *,
    run_id: str,
    manifest: str,
    campaign: str,
    products: list[str],
    metadata_columns: list[str],
    key_source: Any,
    base_url: str,
    database_url: str | None,
    submission: SubmissionOptions,
) -> BatchResult:
    """What ``bulk_check(..., shards=N)`` calls in place of its submit loop (``submission``:
    the run's sending options, ``submission.shards`` shard runs).

    Creates the fleet's rate limit when ``DOCCHECK_RATE_LIMIT_PER_SECOND`` is set, then
    :func:`run_shards` with the shard flow's parameters. ``database_url`` is passed only
    when the parent was given it as a parameter (it may carry a password, and the
    parameters are stored in the Prefect API); otherwise the workers use their own
    ``DOCCHECK_DATABASE_URL``, and a shard whose ledger lacks the run fails naming the fix.
    ``DOCCHECK_CLAIM_LEASE_SECONDS`` shortens the claim lease (how soon a dead worker's keys
    may be taken over); ``DOCCHECK_SHARD_RETRIES`` sets the retries per shard (default 2).
    """
    from pathlib import Path

    from doccheck.storage import is_url
    from prefect_doccheck.tasks import ensure_rate_limit, rate_limit_from_env

    limit = rate_limit_from_env()
    await ensure_rate_limit(limit)
    credentials, api_key_block = credentials_name(key_source)
    parameters: dict[str, Any] = {
        "manifest": manifest if is_url(manifest) else str(Path(manifest).resolve()),  # a URL: as display() shows it
        "campaign": campaign,
        "products": products,
        "metadata_columns": metadata_columns,
        "batch_size": submission.batch_size,
        "concurrency": submission.concurrency,
        "base_url": base_url,
        "database_url": database_url,
        "credentials": credentials,
        "api_key_block": api_key_block,
        "webhook_url": submission.webhook_url,
        "submit_deadline": submission.submit_deadline,
        "max_spend_cents": submission.max_spend_cents,
        "rate_limit_name": limit.name if limit.enabled else None,
        "rate_limit_per_second": limit.per_second if limit.enabled else None,
        "rate_limit_chunk": limit.chunk,
    }
    settings = load_settings()
    if settings.ledger.claim_lease_seconds is not None:
        parameters["claim_lease_seconds"] = settings.ledger.claim_lease_seconds
    return await run_shards(
        run_id=run_id, shards=submission.shards, parameters=parameters, max_retries=settings.shards.retries
    )
