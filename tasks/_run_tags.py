"""The campaign's tag on the flow run itself, not on its task runs.

Why: Prefect 3 checks every *tagged* task run against its tags' concurrency limits
(``POST /v2/concurrency_limits/increment-with-lease``, then a release), whether a limit
exists or not. On a Prefect server backed by SQLite (its default) that request reads, then
writes, in one deferred transaction, and is refused (503, "database is locked") when another
write commits in between; the client then waits ~2 s before it tries again (PrefectHQ/prefect#18934).
Measured on ``doccheck run`` of 10 documents against ``prefect server start``: 3 runs in 10
paid those 2 s while the task runs carried ``campaign:<campaign>`` (docs/benchmarks.md). The flow
run is what a user filters by campaign in the UI, and tagging it is one plain update.
"""

from __future__ import annotations

import logging

__all__ = ["tag_flow_run"]

log = logging.getLogger(__name__)


async def tag_flow_run(*new_tags: str) -> None:
    """Add ``new_tags`` to the running flow run's tags (nothing outside a flow run).

    Best effort: a tag is a filter in the UI, so an API that refuses the update is logged
    (one line) and the run goes on.
    """
    from prefect import get_client
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    run = context.flow_run if context is not None else None
    if run is None:
        return
    tags = sorted(set(run.tags or ()) | set(new_tags))
    if tags == sorted(run.tags or ()):
        return
    try:
        async with get_client() as client:
            await client.update_flow_run(run.id, tags=tags)
    except Exception as exc:  # noqa: BLE001 - a missing tag never fails a run
        log.warning("could not tag flow run %s with %s: %s", run.id, ", ".join(new_tags), type(exc).__name__)
        return
    run.tags = tags
