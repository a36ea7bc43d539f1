"""Planning a run: the manifest read and validated, each document's mode, Idempotency-Key and cost.

Pure where it can be (:func:`load_plan`, :func:`iter_planned`: nothing sent), and the one
place a run's default products and metadata allowlist are parsed (:func:`run_defaults`).
A real run's manifest is recorded in batches (:func:`record_plan`) and re-read one batch at a
time (:func:`read_batch`); a dry run stops after planning (:func:`dry_run`); the shards say
which worker sends which document (:func:`in_shard`).
"""

from __future__ import annotations

from doccheck.errors import ShardConfigError
from doccheck.pipeline.planning._batches import BatchRef, RecordedPlan, load_batch, read_batch, record_plan
from doccheck.pipeline.planning._dry_run import DryRunSummary, dry_run
from doccheck.pipeline.planning._plan import Plan, PlannedDocument, load_plan, run_defaults
from doccheck.pipeline.planning._plan_stream import PlanTally, iter_planned
from doccheck.pipeline.planning._shard_plan import iter_shard
from doccheck.pipeline.planning._shards import check_shared_ledger, in_shard, validate_shard

__all__ = [
    "BatchRef",
    "DryRunSummary",
    "Plan",
    "PlanTally",
    "PlannedDocument",
    "RecordedPlan",
    "ShardConfigError",
    "check_shared_ledger",
    "dry_run",
    "in_shard",
    "iter_planned",
    "iter_shard",
    "load_batch",
    "load_plan",
    "read_batch",
    "record_plan",
    "run_defaults",
    "validate_shard",
]
