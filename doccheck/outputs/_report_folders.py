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

__all__ = [
    "PARTIAL_SUFFIX",
    "STALE_PARTIAL",
    "begin_latest",
    "discarding",
    "final_dir",
    "is_partial",
    "leftover_partials",
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


def staging_dir(run_dir: Path) -> Path:
    """Where ``run_dir`` is written until complete: ``<parent>/.<name>.partial``."""
    return run_dir.with_name(f".{run_dir.name}{PARTIAL_SUFFIX}")


def is_partial(path: Path) -> bool:
    """Whether ``path`` is the name of an incomplete run folder."""
    return path.name.startswith(".") and path.name.endswith(PARTIAL_SUFFIX) and len(path.name) > 9


def final_dir(path: Path) -> Path:
    """The run folder a ``.partial`` name becomes (``path`` itself when it is not one)."""
    return path.with_name(path.name[1 : -len(PARTIAL_SUFFIX)]) if is_partial(path) else path


def work_dir(run_dir: Path | str) -> Path:
    """The folder to read and write a run's files in now: its ``.partial`` folder while one
    exists (the run folder is being built), else the run folder itself."""
    final = final_dir(Path(run_dir))
    stage = staging_dir(final)
    return stage if stage.is_dir() else final


def start_run_folder(run_dir: Path) -> Path:
    """A fresh ``.partial`` folder for ``run_dir``, holding the files the run already
    downloaded (hard links of ``run_dir/files``, so a rewrite of the same run downloads
    nothing again). A leftover ``.partial`` of the same run is an earlier attempt: removed."""
    stage = staging_dir(run_dir)
    for stale in leftover_partials(run_dir.parent):
        if stale == stage:
            shutil.rmtree(stale, ignore_errors=True)
        elif _age(stale) > STALE_PARTIAL:
            log.warning("removing %s: an incomplete report folder left by an interrupted run", stale)
            shutil.rmtree(stale, ignore_errors=True)
        elif _age(stale) > QUIET_PARTIAL:
            log.warning("%s is an incomplete report folder (an interrupted or a running write)", stale)
    stage.mkdir(parents=True)
    files = run_dir / FILES_SUBDIR
    if files.is_dir() and not files.is_symlink():
        shutil.copytree(files, stage / FILES_SUBDIR, copy_function=_link_or_copy, symlinks=True)
    return stage


def leftover_partials(out: Path) -> list[Path]:
    """The ``.partial`` folders in ``out`` (incomplete run folders)."""
    if not out.is_dir():
        return []
    return sorted(c for c in out.iterdir() if is_partial(c) and c.is_dir() and not c.is_symlink())


def begin_latest(latest: Path, source: Path, names: Iterable[str]) -> Path:
    """A new ``latest`` content next to ``latest``: a copy of each of ``names`` that
    ``source`` holds. Swapped in by :func:`publish`; removed by :func:`discarding` on failure."""
    stage = latest.with_name(f".{latest.name}.new-{uuid.uuid4().hex}")
    stage.mkdir(parents=True)
    for name in names:
        if (source / name).is_file():
            shutil.copy2(source / name, stage / name)
    return stage


def publish(run_dir: Path, latest: Path | None = None, latest_stage: Path | None = None) -> None:
    """Rename the complete ``.partial`` folder to ``run_dir`` (when there is one), THEN swap
    ``latest_stage`` in as ``latest``: ``latest`` only ever shows a complete run."""
    stage = staging_dir(run_dir)
    if stage.is_dir():
        swap_in(stage, run_dir)
    if latest is not None and latest_stage is not None:
        swap_in(latest_stage, latest)


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


def _link_or_copy(source: str, target: str) -> object:
    """Hard link (downloads are replaced by rename, never rewritten in place), else copy."""
    try:
        os.link(source, target)
    except OSError:
        return shutil.copy2(source, target)
    return target
