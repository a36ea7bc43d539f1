"""How a run's report folder and ``latest/`` appear on disk: complete, or not at all.

A full disk or a killed process used to leave ``latest/`` half replaced (new Parquet files,
no ``report.html``) and a run folder that looked finished. Now (Linux/POSIX rename semantics):

- a run folder is written as ``<out>/.<run>.partial/`` (same parent, so the rename is one
  ``rename(2)`` on one file system) and renamed to ``<out>/<run>/`` only once every file is in
  it: the reports, the downloaded files, the instructor's page and its sidecars;
- ``latest/`` stays a real folder (readers and copies keep working). Its next content is built
  in ``<out>/.latest.new-<id>/`` (full copies) and swapped in with two renames (the old one
  moved aside to ``.latest.old-<id>``, then removed), only after the run folder is complete.
  Between the two renames ``latest`` is absent for an instant, never half written;
- a failed write removes its own ``.partial`` folder (and frees the space it took); a folder
  left by a killed process is named in a warning by the next write into the same ``<out>``,
  removed once older than :data:`STALE_PARTIAL`, and removed by ``doccheck purge``.

On object storage (``--out s3://bucket/reports``) nothing can be renamed, so a folder is built
exactly as above on the local disk, in the URL's :func:`doccheck.storage.scratch_folder` (a folder
of the system's temporary directory: a flow run's container has no other disk), then published with
:func:`doccheck.storage.publish_tree`: every object put whole, its ``run.json`` (:data:`MARKER`)
out first and in last. Readers (the catalog, the run listings, ``latest/``) count a folder on a
store only while its ``run.json`` is there, so a reader never sees half a run; a process killed
while publishing leaves a folder without ``run.json``, which its rerun's folder supersedes and
``doccheck purge`` removes. ``latest/`` on a store follows the same rule: its copy carries the
run's ``run.json``, removed first and put last (docs/storage.md).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from doccheck.errors import FolderError
from doccheck.storage import UserPath, copy_to_local, files_under, publish_tree, resolve, scratch_folder

__all__ = [
    "MARKER",
    "PARTIAL_SUFFIX",
    "STALE_PARTIAL",
    "begin_latest",
    "discarding",
    "final_dir",
    "is_partial",
    "leftover_partials",
    "local_dir",
    "publish",
    "start_run_folder",
    "staging_dir",
    "swap_in",
    "work_dir",
]

log = logging.getLogger("doccheck.outputs")

PARTIAL_SUFFIX = ".partial"
#: A ``.partial`` folder untouched for this long is an interrupted run's: the next write removes it.
STALE_PARTIAL = 24 * 3600.0
#: Younger than this, a ``.partial`` folder is taken for another writer's, busy: not named.
QUIET_PARTIAL = 600.0
FILES_SUBDIR = "files"
#: A run folder's metadata (``doccheck.outputs._term_catalog``): on a store, the object that says
#: the folder is complete.
MARKER = "run.json"


def local_dir(folder: UserPath) -> Path:
    """Where ``folder`` (a run folder, ``latest``) is built on the local disk: itself there, else
    its name under the :func:`~doccheck.storage.scratch_folder` of its parent."""
    return folder if isinstance(folder, Path) else scratch_folder(folder.parent) / folder.name


def staging_dir(run_dir: Path) -> Path:
    """Where ``run_dir`` is written until complete: ``<parent>/.<name>.partial``."""
    return run_dir.with_name(f".{run_dir.name}{PARTIAL_SUFFIX}")


def is_partial(path: Path) -> bool:
    """Whether ``path`` is the name of an incomplete run folder."""
    return path.name.startswith(".") and path.name.endswith(PARTIAL_SUFFIX) and len(path.name) > 9


def final_dir(path: UserPath | str) -> UserPath:
    """The run folder a ``.partial`` name becomes (the location itself when it is not one)."""
    where = resolve(path)
    if isinstance(where, Path) and is_partial(where):
        return where.with_name(where.name[1 : -len(PARTIAL_SUFFIX)])
    return where


def work_dir(run_dir: UserPath | str) -> Path:
    """The local folder to read and write a run's files in now: its ``.partial`` folder while one
    exists (the run folder is being built), else the run folder itself; on a store, a folder
    already published is first copied back into a ``.partial`` folder (republished whole)."""
    final = final_dir(run_dir)
    stage = staging_dir(local_dir(final))
    if stage.is_dir():
        return stage
    if isinstance(final, Path):
        return final
    return _reopen(final, stage)


def start_run_folder(run_dir: UserPath) -> Path:
    """A fresh ``.partial`` folder for ``run_dir``, holding the files the run already
    downloaded (hard links of ``run_dir/files``, so a rewrite of the same run downloads
    nothing again; on a store, copies of its ``files/``). A leftover ``.partial`` of the same
    run is an earlier attempt: removed."""
    local = local_dir(run_dir)
    stage = staging_dir(local)
    for stale in leftover_partials(local.parent):
        if stale == stage:
            shutil.rmtree(stale, ignore_errors=True)
        elif _age(stale) > STALE_PARTIAL:
            log.warning("removing %s: an incomplete report folder left by an interrupted run", stale)
            shutil.rmtree(stale, ignore_errors=True)
        elif _age(stale) > QUIET_PARTIAL:
            log.warning("%s is an incomplete report folder (an interrupted or a running write)", stale)
    stage.mkdir(parents=True)
    files = run_dir / FILES_SUBDIR
    if not isinstance(files, Path):
        _download(files, stage / FILES_SUBDIR)
    elif files.is_dir() and not files.is_symlink():
        shutil.copytree(files, stage / FILES_SUBDIR, copy_function=_link_or_copy, symlinks=True)
    return stage


def leftover_partials(out: Path) -> list[Path]:
    """The ``.partial`` folders in ``out`` (incomplete run folders)."""
    if not out.is_dir():
        return []
    return sorted(c for c in out.iterdir() if is_partial(c) and c.is_dir() and not c.is_symlink())


def begin_latest(latest: UserPath, source: Path, names: Iterable[str]) -> Path:
    """A new ``latest`` content next to ``latest`` (on a store, next to its local counterpart):
    a copy of each of ``names`` that ``source`` holds, and on a store the run's :data:`MARKER`.
    Swapped in by :func:`publish`; removed by :func:`discarding` on failure."""
    local = local_dir(latest)
    stage = local.with_name(f".{local.name}.new-{uuid.uuid4().hex}")
    stage.mkdir(parents=True)
    for name in [*names, *([] if isinstance(latest, Path) else [MARKER])]:
        if (source / name).is_file():
            shutil.copy2(source / name, stage / name)
    return stage


def publish(run_dir: UserPath, latest: UserPath | None = None, latest_stage: Path | None = None) -> None:
    """Rename the complete ``.partial`` folder to ``run_dir`` (when there is one), THEN swap
    ``latest_stage`` in as ``latest``: ``latest`` only ever shows a complete run. On a store,
    each is published behind its ``run.json`` (:func:`doccheck.storage.publish_tree`) and its
    local folder removed."""
    stage = staging_dir(local_dir(run_dir))
    if stage.is_dir():
        if isinstance(run_dir, Path):
            swap_in(stage, run_dir)
        else:
            publish_tree(stage, run_dir, marker=MARKER)
            shutil.rmtree(stage, ignore_errors=True)
    if latest is not None and latest_stage is not None:
        if isinstance(latest, Path):
            swap_in(latest_stage, latest)
        else:
            publish_tree(latest_stage, latest, marker=MARKER)
            shutil.rmtree(latest_stage, ignore_errors=True)


@contextmanager
def discarding(*paths: Path | None) -> Iterator[None]:
    """Remove ``paths`` when the block fails (an incomplete folder must not stay looking
    like work in progress, nor hold the space a full disk needs back)."""
    try:
        yield
    except BaseException:
        for path in paths:
            if path is not None and path.exists():
                shutil.rmtree(path, ignore_errors=True)
        raise


def swap_in(staging: Path, target: Path) -> None:
    """Replace the folder ``target`` by ``staging`` with renames.

    A directory cannot be renamed onto a non-empty one, so the old copy is moved aside
    first and deleted afterwards. Two writers racing (a run and a scheduled collect) can
    re-create ``target`` in between; the loop then moves that one aside too, so the last
    writer wins and nobody fails.
    """
    for _attempt in range(20):
        old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex}")
        try:
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.exists():
                os.replace(target, old)
        except FileNotFoundError:
            pass  # another writer moved it first
        try:
            os.replace(staging, target)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            continue  # another writer put a new one in place meanwhile: move it aside
        finally:
            if old.exists():
                shutil.rmtree(old, ignore_errors=True)
        return
    raise FolderError(f"could not put {target} in place: too many concurrent writers")


def _age(folder: Path) -> float:
    """Seconds since anything in ``folder`` (or its ``files/``) last changed."""
    stamps = [0.0]
    for path in (folder, folder / FILES_SUBDIR):
        try:
            stamps.append(path.stat().st_mtime)
        except OSError:  # renamed or removed meanwhile by its writer
            if path == folder:
                return 0.0
    return time.time() - max(stamps)


def _reopen(run_dir: UserPath, stage: Path) -> Path:
    """A published run folder on a store, copied into its ``.partial`` folder to be written again."""
    stage.parent.mkdir(parents=True, exist_ok=True)
    scratch = stage.with_name(f"{stage.name}.new-{uuid.uuid4().hex}")
    try:
        _download(run_dir, scratch)
        os.replace(scratch, stage)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return stage


def _download(folder: UserPath, target: Path) -> None:
    """Every file under ``folder`` (on a store) into the local folder ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    for name in files_under(folder):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        copy_to_local(folder / name, target / name)


def _link_or_copy(source: str, target: str) -> object:
    """Hard link (downloads are replaced by rename, never rewritten in place), else copy."""
    try:
        os.link(source, target)
    except OSError:
        return shutil.copy2(source, target)
    return target
