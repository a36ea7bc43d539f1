"""What a run's reads of one manifest share in a process: the listing of its folder or prefix and
the manifest's identity.

Why a module of its own: a run's recording and every batch read in the same process ask the same
two questions of the store (which files are there, with what size and ETag; is the manifest the
one recorded), and a term's answer to the first is 100,000 keys. Asked once a run in each
process (one LIST, one HEAD), kept for the two latest runs, and let go once the run's batches are
sent (:func:`release_run_files`), so that it is not held through the reports, where the run peaks.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from doccheck.sources.manifest import manifest_listing
from doccheck.storage import Listing, as_storage_error, describe, display, resolve

__all__ = ["RunFiles", "manifest_stamp", "release_run_files", "run_files"]


@dataclass
class RunFiles:
    """What a run's reads of one manifest share in a process: the listing of its folder or prefix
    (one LIST on a store) and its identity when first asked (on a store: one HEAD)."""

    listing: Listing
    stamp: str | None


#: The manifests being read, by (run, manifest): a run's batches, read in this process one after
#: the other, share one listing (a term's 100,000 keys: kept for the two latest runs only).
_RUN_FILES: OrderedDict[tuple[str, str], RunFiles] = OrderedDict()
_RUN_FILES_KEPT = 2
_RUN_FILES_LOCK = threading.Lock()


def run_files(run_id: str, manifest: str | os.PathLike[str], listing: Listing | None = None) -> RunFiles:
    """The listing and identity ``run_id``'s reads of ``manifest`` share in this process (made on
    first use, or from ``listing``: the recording's)."""
    key = (run_id, display(resolve(manifest)))
    with _RUN_FILES_LOCK:
        found = _RUN_FILES.get(key)
        if found is None or (listing is not None and found.listing is not listing):
            found = RunFiles(listing if listing is not None else manifest_listing(manifest), None)
            found.stamp = _stamp(manifest)
            _RUN_FILES[key] = found
        _RUN_FILES.move_to_end(key)
        while len(_RUN_FILES) > _RUN_FILES_KEPT:
            _RUN_FILES.popitem(last=False)
        return found


def release_run_files(run_id: str) -> None:
    """Forget what :func:`run_files` keeps for ``run_id`` in this process: once a run's batches are
    sent nothing of it reads the manifest's files again, and a term's listing (100,000 keys: ~20 MB)
    would otherwise be held through its reports, where the run's memory peaks. A read after this
    lists the prefix again."""
    with _RUN_FILES_LOCK:
        for key in [key for key in _RUN_FILES if key[0] == run_id]:
            del _RUN_FILES[key]


def manifest_stamp(manifest: str | os.PathLike[str], run_id: str | None = None) -> str | None:
    """What tells a batch re-read that the manifest is the one recorded, without reading it (None
    when it cannot be read): a local file's size and modification time, asked each time; a
    store's file's identity (ETag and size), asked once a run in this process (``run_id``:
    :func:`run_files`), so a rerun's batches make no request each."""
    if run_id is not None and not isinstance(resolve(manifest), Path):
        return run_files(run_id, manifest).stamp
    return _stamp(manifest)


def _stamp(manifest: str | os.PathLike[str]) -> str | None:
    try:
        path = resolve(manifest)
        if isinstance(path, Path):
            st = os.stat(path)
            return f"{st.st_size}:{st.st_mtime_ns}"
        with as_storage_error(path):
            entry = describe(path)
    except OSError:
        return None
    return entry.identity if entry is not None else None
