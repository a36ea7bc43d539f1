"""Walk a zip or an unzipped folder of an LMS export without extracting it, within bounds.

An export is untrusted: it holds whatever students uploaded, and a hostile zip can name
``../../etc/x``, an absolute path, a symlink, or a member that inflates a thousandfold. Each
such entry is refused on its own (with its reason) and the walk goes on; only a walk past its
entry count or time budget stops, because then the rest cannot be trusted to be read in time.
Names are read from the zip's central directory; no member is inflated here, so a 2 GB export
is never held in memory nor extracted twice: :func:`copy_member` streams one member, capped,
when a document is actually read.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from doccheck.errors import UnsafeExport
from doccheck.extract import MAX_COMPRESSION_RATIO, RATIO_FLOOR_BYTES
from doccheck.sources.lms._model import Entry
from doccheck.sources.manifest._limits import MAX_FILE_BYTES

__all__ = ["ExportLimits", "Refused", "copy_member", "walk_export"]


@dataclass(frozen=True)
class ExportLimits:
    """Bounds on one export; per member they are the same as for one manifest file."""

    max_entries: int = 100_000
    max_member_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = 64 * 1024**3
    max_ratio: int = MAX_COMPRESSION_RATIO
    ratio_floor_bytes: int = RATIO_FLOOR_BYTES
    max_seconds: float = 120.0


DEFAULT_LIMITS = ExportLimits()


@dataclass(frozen=True)
class Refused:
    """One entry refused before it is read, with the reason."""

    name: str
    reason: str


def _unsafe_name(name: str) -> str | None:
    """Why a member name would land outside the extraction folder, or None when it is safe."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if "\\" in name:
        return "a backslash in its path"
    if any(part == ".." for part in PurePosixPath(name).parts):
        return "a '..' that leaves the export's folder"
    if "\x00" in name:
        return "a NUL in its name"
    return None


def walk_export(path: Path, limits: ExportLimits = DEFAULT_LIMITS) -> Iterator[Entry | Refused]:
    """Every file entry of ``path`` (a .zip or a folder) in name order, or why it is refused."""
    deadline = time.monotonic() + limits.max_seconds
    source = _zip_entries(path, limits) if path.is_file() else _folder_entries(path)
    total = 0
    for count, item in enumerate(source, start=1):
        if count > limits.max_entries:
            raise UnsafeExport(f"{path.name}: more than {limits.max_entries} entries")
        if time.monotonic() > deadline:
            raise UnsafeExport(f"{path.name}: not listed within {limits.max_seconds:.0f} s")
        if isinstance(item, Entry):
            if item.size > limits.max_member_bytes:
                item = Refused(item.name, f"{item.size} bytes, over the {limits.max_member_bytes}-byte upload limit")
            else:
                total += item.size
                if total > limits.max_total_bytes:
                    raise UnsafeExport(f"{path.name}: inflates to more than {limits.max_total_bytes} bytes")
        yield item


def _zip_entries(path: Path, limits: ExportLimits) -> Iterator[Entry | Refused]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UnsafeExport(f"{path.name}: not a readable zip ({exc})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.max_entries:
            raise UnsafeExport(f"{path.name}: {len(infos)} entries, over {limits.max_entries}")
        for info in sorted(infos, key=lambda i: i.filename):
            if info.is_dir():
                continue
            name = info.filename
            why = _unsafe_name(name)
            if why is None and stat.S_ISLNK(info.external_attr >> 16):
                why = "a symbolic link"
            if why is None and info.file_size > limits.ratio_floor_bytes:
                ratio = info.file_size / max(info.compress_size, 1)
                if ratio > limits.max_ratio:
                    why = f"a compression ratio of {ratio:.0f}:1 (over {limits.max_ratio}:1)"
            yield Refused(name, f"refused: {why}") if why else Entry(name, info.file_size)


def _folder_entries(root: Path) -> Iterator[Entry | Refused]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        here = Path(dirpath)
        for d in list(dirnames):
            if (here / d).is_symlink():
                dirnames.remove(d)
                yield Refused((here / d).relative_to(root).as_posix(), "refused: a symbolic link")
        for f in sorted(filenames):
            full = here / f
            name = full.relative_to(root).as_posix()
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                yield Refused(name, "refused: a symbolic link")
            elif not stat.S_ISREG(st.st_mode):
                yield Refused(name, "refused: not a regular file")
            else:
                yield Entry(name, st.st_size)


def copy_member(
    export: Path,
    name: str,
    out: BinaryIO,
    limits: ExportLimits = DEFAULT_LIMITS,
    opened: zipfile.ZipFile | None = None,
) -> int:
    """Stream one member to ``out``, stopping at the per-member bound whatever the zip declared.

    ``opened``: the export's zip already open, so that copying every member reads the central
    directory once, not once per member.
    """
    if _unsafe_name(name) is not None:
        raise UnsafeExport(f"{name!r}: unsafe member name")
    written = 0
    with contextlib.ExitStack() as stack:
        if export.is_file():
            archive = opened or stack.enter_context(zipfile.ZipFile(export))
            src = stack.enter_context(archive.open(name))
        else:
            # O_NOFOLLOW: a file swapped for a symlink after the walk is refused, not followed.
            fd = os.open(export / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            src = stack.enter_context(os.fdopen(fd, "rb"))
        while chunk := src.read(1024 * 1024):
            written += len(chunk)
            if written > limits.max_member_bytes:
                raise UnsafeExport(f"{name!r}: inflates past {limits.max_member_bytes} bytes")
            out.write(chunk)
    return written
