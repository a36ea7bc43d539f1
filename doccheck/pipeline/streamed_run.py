"""The two steps of :mod:`doccheck.pipeline.orchestrate` that change when a run streams (issue 10).

Why a module of its own: ``run_checks`` takes its steps from a :class:`~doccheck.pipeline.orchestrate.Steps`
(Prefect tasks for the flow, :class:`~doccheck.pipeline.orchestrate.LocalSteps` for the notebook);
only *prepare* and *submit* depend on whether the run holds a whole ``Plan`` or streams. These
functions are those two steps over :mod:`doccheck.pipeline.batches`, callable from either kind of
step (a Prefect task body or a local call):

- :func:`prepare_streamed` records the manifest in ONE pass and matches the cohort on the way
  (the documents stream from the recording into ``match_cohort``), returning a ``Prepared``
  whose ``plan`` is the :class:`~doccheck.plan_stream.PlanTally` and whose ``batches`` are
  :class:`~doccheck.pipeline.batches.BatchRef` (no texts: safe as task parameters and results);
- :func:`submit_streamed` re-reads one ref and submits it.

:class:`StreamedLocalSteps` is ``LocalSteps`` with these two steps: the notebook's run, streamed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from doccheck.ledger import Ledger
from doccheck.options import RunOptions
from doccheck.pipeline.batches import BatchRef, start_recording, submit_ref
from doccheck.pipeline.budget import Budget
from doccheck.pipeline.orchestrate import LocalSteps, Prepared
from doccheck.pipeline.progress import ProgressCallback
from doccheck.pipeline.submit import BatchResult

__all__ = ["StreamedLocalSteps", "prepare_streamed", "submit_streamed"]


def prepare_streamed(
    ledger: Ledger,
    options: RunOptions,
    *,
    params: Mapping[str, Any] | None = None,
    manifest_label: str | None = None,
    match: bool = True,
) -> Prepared:
    """Start the run, record the manifest batch by batch and match the cohort, in one read of the file.

    What ``LocalSteps.prepare`` does with a whole ``Plan`` (record, match with the campaign's
    earlier runs, store the pairs), in memory that does not grow with the texts. Blocking:
    call it in a thread from async code. Raises ``ManifestError`` before anything is recorded
    when the manifest as a whole is unusable.
    """
    source = options.source
    recording = start_recording(
        ledger, source.manifest, campaign=source.campaign_name, products=source.products,
        metadata_columns=source.metadata_columns, params=params, batch_size=options.submission.batch_size,
    )  # fmt: skip
    cohort: dict[str, Any] = {}
    if match:
        from doccheck.ledger.signatures import replace_cohort_matches
        from doccheck.matching import summary_of
        from doccheck.matching.cohort import MatchOptions, match_cohort
        from doccheck.matching.store import LedgerStore

        match_options = MatchOptions()
        if source.templates:
            match_options = replace(
                match_options, template_files=tuple(match_options.template_files) + tuple(source.templates)
            )
        result = match_cohort(recording.documents(), campaign=recording.campaign, run_id=recording.run_id,
                              store=LedgerStore(ledger), options=match_options)  # fmt: skip
        replace_cohort_matches(ledger, recording.run_id, recording.campaign, result.pairs)
        cohort = summary_of(result)
    recorded = recording.finish()
    return Prepared(
        run_id=recorded.run_id, manifest=manifest_label or source.manifest, plan=recorded.tally,  # type: ignore[arg-type]
        documents=recorded.documents, products=recorded.product_checks, batches=list(recorded.batches), cohort=cohort,
    )  # fmt: skip


async def submit_streamed(
    client: Any,
    ledger: Ledger,
    ref: BatchRef,
    *,
    prepared: Prepared,
    options: RunOptions,
    concurrency: int,
    budget: Budget | None,
    deadline_at: float,
    on_progress: ProgressCallback | None = None,
) -> BatchResult:
    """One ``BatchRef`` of a streamed run: re-read (off the event loop) and submitted.

    Rows changed in the file since :func:`prepare_streamed` are not sent; they are counted in
    the result as ``failed`` with the ``manifest_changed`` code (see ``read_batch``).
    """
    source = options.source
    return await submit_ref(
        client, ledger, prepared.run_id, source.manifest, ref, campaign=prepared.campaign, products=source.products,
        metadata_columns=source.metadata_columns, concurrency=concurrency, webhook_url=options.submission.webhook_url,
        budget=budget, on_progress=on_progress, deadline_at=deadline_at,
    )  # fmt: skip


class StreamedLocalSteps(LocalSteps):
    """``LocalSteps`` (the notebook's run without Prefect) with the streamed prepare and submit."""

    async def prepare(self, options: RunOptions) -> Prepared:
        return await asyncio.to_thread(
            prepare_streamed, self._ledger, options, params=self._params, manifest_label=self._manifest_label
        )

    async def submit(self, batch: Any, *, prepared: Prepared, number: int, count: int, concurrency: int,
                     budget: Budget | None, deadline_at: float, options: RunOptions) -> BatchResult:  # fmt: skip
        def progress(p: Any) -> None:
            self._submitted[number] = p.done
            if self._on_submit is not None:
                self._on_submit(sum(self._submitted.values()))

        return await submit_streamed(self._client, self._ledger, batch, prepared=prepared, options=options,
                                     concurrency=concurrency, budget=budget, deadline_at=deadline_at,
                                     on_progress=progress)  # fmt: skip
