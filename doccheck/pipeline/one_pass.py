"""A real run's prepare step in ONE read of the manifest: recording and cohort matching together.

Why: ``orchestrate.LocalSteps.prepare`` (and the flow's "record plan" task) records the manifest
in one streamed pass and then reads it a second time to feed cohort matching, because the
recording keeps no text. The second read costs a whole parse, hash and word count of the file
(~5 s per 20,000 rows of 400 words, ~25 s per 100,000 on this machine). Here the documents
stream from :func:`doccheck.pipeline.batches.start_recording` straight into the matcher while
the batches are recorded underneath, so the file is parsed once; memory is the same (one
document at a time, plus the matcher's own per-document state).
"""

from __future__ import annotations

import asyncio
from typing import Any

from doccheck.ledger import Ledger
from doccheck.options import RunOptions
from doccheck.pipeline.batches import start_recording
from doccheck.pipeline.orchestrate import LocalSteps, Prepared, prepared_from

__all__ = ["OnePassLocalSteps", "prepare_one_pass"]


def prepare_one_pass(
    ledger: Ledger, options: RunOptions, *, params: dict[str, Any] | None = None, run_id: str | None = None
) -> Prepared:
    """``record_run`` + ``match_recorded`` of :mod:`doccheck.pipeline.orchestrate`, reading the file once.

    Blocking (call it in a thread from async code). ``ManifestError`` for an unusable manifest
    is raised before the run is started; ``run_id`` records into that run (a retried task).
    """
    from doccheck.matching import summary_of
    from doccheck.matching.runs import match_documents

    source = options.source
    recording = start_recording(
        ledger, source.manifest, campaign=source.campaign_name, products=source.products,
        metadata_columns=source.metadata_columns, params=params, batch_size=options.submission.batch_size,
        run_id=run_id,
    )  # fmt: skip
    result = match_documents(recording.documents(), recording.campaign, run_id=recording.run_id, ledger=ledger,
                             templates=source.templates)  # fmt: skip
    return prepared_from(recording.finish(), summary_of(result))


class OnePassLocalSteps(LocalSteps):
    """``LocalSteps`` whose prepare reads the manifest once (:func:`prepare_one_pass`)."""

    async def prepare(self, options: RunOptions) -> Prepared:
        return await asyncio.to_thread(prepare_one_pass, self._ledger, options, params=self._params)
