"""A rerun with nothing new takes its run folder from the campaign's last one (issue 49).

Why: the weekly rerun of a 100,000-document term rebuilt, row by row, reports, a wide table and
200 group pages identical to last week's but for the run's id, its ``new_this_run`` flags and
the line that names the run: 59 % of the rerun's CPU. Each run folder now keeps, in
:data:`INPUTS_FILE`, digests of what its files were built from:

- ``reports``: the ledger's report inputs (:func:`doccheck.ledger.report_inputs_digest`: the
  run's documents, rejections and cohort matches, the campaign's submissions, outcomes, costs,
  reads, review decisions and passages), the metadata columns, and the code that builds reports
  (this package's and the ledger's sources, hashed: a new version never reuses an old folder);
- ``files``: that, plus what only the instructor's files depend on (the AI rules, the
  reference campaign's scores, the grouping column, downloaded files).

A run whose ``reports`` digest equals the campaign's newest folder's rewrites that folder's
Parquet tables in Arrow (``run_id`` set to the new run, ``new_this_run`` false where it was
set), and when ``files`` is equal too, its
wide table, CSV and group pages (:mod:`doccheck.outputs.instructor._reused_files`); the entry
page, ``calibration.json`` and ``run.json`` are always written anew. A run that submitted a
check while it ran (a first run, or a ``collect`` of one) has flags of its own and is always
built (:func:`doccheck.ledger.submitted_in_run`). Anything unexpected (a
file missing, a folder unreadable) builds from the ledger as before: reuse is only ever a
shortcut to the same bytes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from doccheck.storage import UserPath, copy_to_local, files_under, subfolders

__all__ = [
    "INPUTS_FILE",
    "FolderInputs",
    "copy_reports",
    "files_digest",
    "local_files",
    "previous_folder",
    "read_inputs",
    "reports_digest",
    "rewrite_table",
    "reusable_tables",
    "write_inputs",
]

log = logging.getLogger("doccheck.outputs")

#: A run folder's digests (hidden: not one of the tables, published and purged with the folder).
INPUTS_FILE = ".inputs.json"
#: Rows rewritten at a time, as the wide table is built (a chunk's dicts for the tally, never the run's).
_BATCH = 2000
#: A run folder's name (``doccheck.outputs.run_label``): the campaign, a UTC time, the run id's start.
_LABEL = re.compile(r"(.+)-\d{8}T\d{9}Z-.{1,8}")
#: The columns that name the run: set to the new run's id.
RUN_COLUMN = "run_id"
#: Whether this run submitted the row's check: false in a reused folder (null stays null).
NEW_COLUMN = "new_this_run"


@dataclass(frozen=True)
class FolderInputs:
    """What a run folder was built from (see the module's docstring); ``reused``: the folder
    its files were taken from, if any."""

    reports: str
    files: str | None = None
    reused: str | None = None


def reports_digest(ledger_digest: str, metadata_columns: Sequence[str], sidecar: Any = None) -> str:
    """The ``reports`` digest: the ledger's, the report's metadata columns, the LMS export's
    sidecar (its students' columns are joined into the rows) and the code's."""
    return _digest({"ledger": ledger_digest, "metadata": list(metadata_columns), "sidecar": sidecar,
                    "code": _code_stamp()})  # fmt: skip


def files_digest(reports: str, **inputs: Any) -> str:
    """The ``files`` digest: ``reports`` and the instructor files' own inputs (JSON-able)."""
    return _digest({"reports": reports, **inputs})


def read_inputs(folder: UserPath) -> FolderInputs | None:
    """The folder's :data:`INPUTS_FILE` (None when it has none or it cannot be read)."""
    try:
        data = json.loads((folder / INPUTS_FILE).read_text(encoding="utf-8"))
        return FolderInputs(reports=str(data["reports"]), files=data.get("files"), reused=data.get("reused"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_inputs(folder: Path, inputs: FolderInputs) -> None:
    """Write :data:`INPUTS_FILE` into the local folder being built (renamed into place)."""
    data = {"reports": inputs.reports, "files": inputs.files, "reused": inputs.reused}
    target = folder / INPUTS_FILE
    tmp = target.with_name(f"{INPUTS_FILE}.tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_text(json.dumps(data) + "\n", encoding="utf-8")
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def previous_folder(out: UserPath, run_label: str, campaign: str) -> UserPath | None:
    """The campaign's newest complete run folder in ``out`` before ``run_label`` (its name is
    ``<campaign>-<time>-<run id prefix>``: the newest is the last by name), or None."""
    named = _LABEL.fullmatch(run_label)
    if named is None:
        return None
    pattern = re.compile(re.escape(named.group(1)) + _LABEL.pattern[4:])
    try:
        folders = sorted(f.name for f in subfolders(out) if pattern.fullmatch(f.name) and f.name < run_label)
    except OSError as exc:
        log.debug("no earlier run folder to reuse in %s: %s", out, exc)
        return None
    for name in reversed(folders):
        folder = out / name
        run = _run_of(folder)
        if run is None:  # being published, or left by a killed process: not a complete folder
            continue
        return folder if run.get("campaign") == campaign else None
    return None


def copy_reports(
    stage: Path, out: UserPath, label: str, *, campaign: str | None, run_id: str, inputs: str, names: Sequence[str]
) -> str | None:
    """Rewrite for ``run_id`` into ``stage`` the tables ``names`` of the campaign's newest folder
    in ``out`` when its ``reports`` digest is ``inputs``; that folder's name, or None (nothing
    written: the caller builds them)."""
    previous = previous_folder(out, label, campaign) if campaign else None
    prior = read_inputs(previous) if previous is not None else None
    if previous is None or prior is None or prior.reports != inputs or not reusable_tables(previous, names):
        return None
    with local_files(previous, names) as source:
        for name in names:
            for _batch in rewrite_table(source / name, stage / name, run_id):
                pass
    return previous.name


def reusable_tables(previous: UserPath, names: Iterable[str]) -> bool:
    """Whether ``previous`` holds every one of ``names`` (else it is not reused)."""
    wanted = list(names)
    if isinstance(previous, Path):
        return all((previous / n).is_file() for n in wanted)
    found = files_under(previous)
    return all(n in found for n in wanted)


@contextlib.contextmanager
def local_files(previous: UserPath, names: Iterable[str]) -> Iterator[Path]:
    """A local folder holding ``names`` of ``previous``: the folder itself on the disk, else a
    temporary copy of those files (removed after)."""
    if isinstance(previous, Path):
        yield previous
        return
    scratch = Path(tempfile.mkdtemp(prefix="doccheck-reuse-"))
    try:
        for name in names:
            (scratch / name).parent.mkdir(parents=True, exist_ok=True)
            copy_to_local(previous / name, scratch / name)
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def rewrite_table(source: Path, target: Path, run_id: str) -> Iterator[pa.RecordBatch]:
    """Copy the Parquet file ``source`` to ``target`` (written beside it, then renamed) with
    its run columns rewritten for ``run_id``, yielding each rewritten batch as it is written
    (the wide table's CSV and tally are made from them)."""
    parquet = pq.ParquetFile(source)
    schema = parquet.schema_arrow
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        with pq.ParquetWriter(tmp, schema) as writer:
            for batch in parquet.iter_batches(batch_size=_BATCH, use_threads=False):
                rewritten = _for_run(batch, run_id)
                writer.write_batch(rewritten)
                yield rewritten
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def _for_run(batch: pa.RecordBatch, run_id: str) -> pa.RecordBatch:
    """``batch`` as the run ``run_id`` writes it: its run column names the run, and no row's
    check is new in it."""
    columns = list(batch.columns)
    names = batch.schema.names
    if RUN_COLUMN in names:
        at = names.index(RUN_COLUMN)
        column = columns[at]
        columns[at] = pc.if_else(pc.is_valid(column), pa.scalar(run_id, column.type), pa.scalar(None, column.type))
    if NEW_COLUMN in names:
        at = names.index(NEW_COLUMN)
        column = columns[at]
        columns[at] = pc.if_else(pc.is_valid(column), pa.scalar(False, column.type), pa.scalar(None, column.type))
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _run_of(folder: UserPath) -> Mapping[str, Any] | None:
    """The folder's ``run.json`` (None when absent or unreadable)."""
    try:
        data = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _digest(data: Mapping[str, Any]) -> str:
    return hashlib.blake2b(json.dumps(data, sort_keys=True, default=str).encode(), digest_size=20).hexdigest()


@functools.cache
def _code_stamp() -> str:
    """A digest of the sources that build a run folder (this package's and the ledger's): a
    changed report never reuses a folder an older build wrote."""
    digest = hashlib.blake2b(digest_size=20)
    outputs = Path(__file__).parent
    for root in (outputs, outputs.parent / "ledger"):
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".j2", ".css", ".js", ".html"):
                digest.update(str(path.relative_to(root)).encode() + b"\x00" + path.read_bytes())
    return digest.hexdigest()
