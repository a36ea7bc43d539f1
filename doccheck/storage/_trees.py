"""A folder of outputs on a store: published behind its marker, listed, copied without a download.

Why: a run's report folder is many objects (its tables, its page, the service's files), and a
store has no rename that would make them appear at once, as ``rename(2)`` does on the disk. So a
folder is published in an order a reader can rely on (:func:`publish_tree`): its marker
(``run.json``) goes first out and last in, and a reader counts the folder only while the marker
is there. A process killed at any point leaves the folder without its marker, never one that
says it is complete; publishing it again completes it (every object is put whole).

:func:`subfolders` lists one level (one delimited LIST on a store, not a request per folder),
:func:`files_under` every file of a prefix with its size and ETag (one LIST), and
:func:`copy_file` copies an object inside its store (S3's CopyObject: no byte passes through
this process), which the hive-style ``tables/`` tree of a bucket uses where the disk has links.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from doccheck.storage._listing import Entry, _entry, _stat
from doccheck.storage._locations import UserPath, display
from doccheck.storage._writes import open_output

__all__ = ["copy_file", "files_under", "publish_tree", "scratch_folder", "subfolders"]


def scratch_folder(location: UserPath) -> Path:
    """The local folder where work for ``location`` is done before it is published there: the
    location itself on the disk; for a store, ``<temp>/doccheck-scratch/<digest of its URL>``, the
    same for every process of the machine (a retried task finds what its first attempt left, and
    ``doccheck purge`` finds what a killed one left)."""
    if isinstance(location, Path):
        return location
    digest = hashlib.sha256(display(location).encode("utf-8")).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "doccheck-scratch" / digest


def publish_tree(source: Path, target: UserPath, *, marker: str) -> int:
    """Make the folder ``target`` hold exactly the files of the local folder ``source``, its
    ``marker`` (a relative name such as ``"run.json"``) out first and in last:

    1. ``target/marker`` is removed (the folder stops counting while it changes);
    2. every other file of ``source`` is put, each whole, over what was there;
    3. what ``target`` held that ``source`` does not (an earlier write's files) is removed;
    4. ``source/marker`` is put, when ``source`` has one.

    How many files were put. A ``source`` without the marker publishes a folder no reader counts."""
    names = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    before = files_under(target)
    if marker in before:
        _remove(target / marker)
    for name in names:
        if name != marker:
            _put(source / name, target / name)
    for name in sorted(set(before) - set(names) - {marker}):
        _remove(target / name)
    if marker in names:
        _put(source / marker, target / marker)
    return len(names)


def files_under(base: UserPath, *, recursive: bool = True) -> dict[str, Entry]:
    """Every file under the folder or prefix ``base``, by its name relative to it (``a/b.pdf``):
    one LIST on a store, a walk of the folder on the disk (symbolic links not followed).
    ``recursive=False``: only the files directly in it (a delimited LIST: a run folder's tables
    without the thousands of downloads under its ``files/``)."""
    if isinstance(base, Path):
        if not base.is_dir():
            return {}
        found: dict[str, Entry] = {}
        for path in base.rglob("*") if recursive else base.iterdir():
            entry = None if path.is_symlink() else _stat(path)
            if entry is not None:
                found[path.relative_to(base).as_posix()] = entry
        return found
    prefix = base.path.strip("/") + "/"
    try:
        listed = base.fs.find(base.path, detail=True) if recursive else base.fs.ls(base.path, detail=True)
    except FileNotFoundError:
        return {}
    return {
        name[len(prefix) :]: _entry(info)
        for name, info in _items(listed)
        if info.get("type") == "file" and name.startswith(prefix)
    }


def subfolders(base: UserPath) -> list[UserPath]:
    """The folders directly under ``base``, by name (none when ``base`` is not there): one
    delimited LIST on a store, where a folder is a common prefix of its objects."""
    if isinstance(base, Path):
        if not base.is_dir():
            return []
        return sorted(c for c in base.iterdir() if c.is_dir() and not c.is_symlink())
    try:
        listed = base.fs.ls(base.path, detail=True)
    except FileNotFoundError:
        return []
    names = {str(info["name"]).rstrip("/").rsplit("/", 1)[-1] for info in listed if info.get("type") == "directory"}
    return [base / name for name in sorted(names)]


def copy_file(source: UserPath, target: UserPath) -> None:
    """``target`` becomes a whole copy of ``source``: inside one store a server-side copy, else
    streamed through a temporary file (:func:`~doccheck.storage.open_output`)."""
    if not isinstance(source, Path) and not isinstance(target, Path) and source.fs is target.fs:
        source.fs.copy(source.path, target.path)
        return
    with source.open("rb") as data, open_output(target) as out:
        shutil.copyfileobj(data, out, 1024 * 1024)


def _put(local: Path, target: UserPath) -> None:
    if isinstance(target, Path):
        with open(local, "rb") as data, open_output(target) as out:
            shutil.copyfileobj(data, out, 1024 * 1024)
    else:
        target.fs.put_file(str(local), target.path)


def _remove(path: UserPath) -> None:
    if isinstance(path, Path):
        path.unlink(missing_ok=True)
    else:
        try:
            path.fs.rm_file(path.path)
        except FileNotFoundError:
            pass


def _items(listed: Mapping[str, dict[str, object]] | list[dict[str, object]]) -> list[tuple[str, dict[str, object]]]:
    """``find(detail=True)`` answers a mapping; some stores' ``find`` a list of details."""
    if isinstance(listed, Mapping):
        return [(str(name).lstrip("/"), info) for name, info in listed.items()]
    return [(str(info["name"]).lstrip("/"), info) for info in listed]
