"""How long one document can be retried before it is given up: the layers, added up.

Why written down: retries stack (the client's tries of one request, the run's requeue until
its submit deadline, the ledger's retries of a lost database, the flow's task retries, the
shards' reruns), and an operator must know the worst case before a term's run, not find it
in six modules. Each layer's figure is read from where it is enforced (no copy); the task
retries are defined here and used by ``tasks/`` (the library does not import Prefect).
After the worst case a document is ``retry_later`` (never lost): rerunning the same command
resumes it, with the same Idempotency-Key.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from doccheck.client import RetryPolicy
from doccheck.config import Settings
from doccheck.ledger import RETRY_SECONDS
from doccheck.pipeline._options import DEFAULT_SUBMIT_DEADLINE_SECONDS

__all__ = ["TASK_RETRIES", "TASK_RETRY_DELAYS", "RetryBudget", "retry_budget"]

#: Retries of a flow's task that met a transient error (network, 5xx, 429, a locked database).
TASK_RETRIES = 2
#: Seconds between a task's attempts.
TASK_RETRY_DELAYS: tuple[float, ...] = (2.0, 10.0)


@dataclass(frozen=True)
class RetryBudget:
    """The layers (seconds, counts) and the worst case of each way to run."""

    client_tries: int
    client_seconds: float
    submit_deadline_seconds: float
    ledger_retry_seconds: float
    task_retries: int
    task_retry_delays_seconds: float
    shard_runs: int
    in_process_seconds: float
    flow_seconds: float
    sharded_seconds: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)

    def sentence(self) -> str:
        """The worst case in words, for ``doccheck config``."""
        return (
            f"Retry worst case for one document: {_hm(self.in_process_seconds)} in process, "
            f"{_hm(self.flow_seconds)} as a flow, {_hm(self.sharded_seconds)} sharded "
            f"(the client's {self.client_tries} tries within {self.client_seconds:g} s per request; requeued until "
            f"the submit deadline, {self.submit_deadline_seconds:g} s; the ledger's retries, "
            f"{self.ledger_retry_seconds:g} s; {self.task_retries} task retries; {self.shard_runs} runs per shard). "
            "Then it is left retry_later: the same command resumes it."
        )


def _hm(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def retry_budget(settings: Settings, *, submit_deadline: float | None = None) -> RetryBudget:
    """The worst case, from ``settings`` (shard reruns) and the run's ``submit_deadline``.

    One attempt of the submit step: requeued until the deadline, then its last request may
    still take the client's whole budget and its recording the ledger's. A flow repeats
    that step on a transient failure (task retries, with their delays); a shard is run
    again when it failed or was lost, each run with a deadline of its own.
    """
    client = RetryPolicy()
    deadline = DEFAULT_SUBMIT_DEADLINE_SECONDS if submit_deadline is None else submit_deadline
    attempt = deadline + client.deadline_seconds + RETRY_SECONDS
    flow = (TASK_RETRIES + 1) * attempt + sum(TASK_RETRY_DELAYS)
    shard_runs = settings.shards.retries + 1
    return RetryBudget(
        client_tries=client.max_attempts,
        client_seconds=client.deadline_seconds,
        submit_deadline_seconds=deadline,
        ledger_retry_seconds=RETRY_SECONDS,
        task_retries=TASK_RETRIES,
        task_retry_delays_seconds=sum(TASK_RETRY_DELAYS),
        shard_runs=shard_runs,
        in_process_seconds=attempt,
        flow_seconds=flow,
        sharded_seconds=shard_runs * flow,
    )
