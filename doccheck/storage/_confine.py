"""A manifest row's path, joined to the manifest's location and kept under it.

Why: a row names its file relative to the manifest, and a hostile or mistaken row must not reach
past it: ``../other/x.txt``, an absolute path, another bucket, another scheme (``http://`` could
make doccheck fetch from anywhere; ``file://`` in a bucket manifest would read the worker's disk).
Such a row is refused with its reason and nothing is fetched for it. On the local disk the rule is
the one doccheck always had (resolved, symbolic links followed, inside the manifest's folder); on a
store the key is normalised (``a/../b`` is ``b``) and must stay under the manifest's prefix.
"""

from __future__ import annotations

import posixpath
from pathlib import Path, PureWindowsPath

from upath import UPath

from doccheck.errors import OutsideLocation
from doccheck.storage._joins import joined
from doccheck.storage._locations import UserPath, is_url

__all__ = ["child"]

_HINT = "paths are relative to the manifest's location and must stay inside it"


def child(base: UserPath, raw: str) -> UserPath:
    """``raw`` (a row's path) under ``base`` (the manifest's folder or prefix); raises
    :class:`OutsideLocation` naming why when it leaves it. Local paths come back resolved
    (symbolic links followed), as the manifest readers always had them."""
    if is_url(raw):
        scheme = raw.split(":", 1)[0].lower()
        raise OutsideLocation(f"is a {scheme}:// URL, not a path under the manifest's location; {_HINT}")
    if raw.startswith(("/", "\\")) or PureWindowsPath(raw).drive:
        raise OutsideLocation(f"is an absolute path; {_HINT}")
    if not isinstance(base, Path):
        return _remote_child(base, raw)
    resolved = (base / raw).resolve()  # follows symlinks; OSError/RuntimeError (loops) to the caller
    if not resolved.is_relative_to(base):
        raise OutsideLocation(f"resolves (through '..' or a symbolic link) outside the manifest's folder; {_HINT}")
    return resolved


def _remote_child(base: UPath, raw: str) -> UPath:
    prefix = base.path.rstrip("/")
    key = posixpath.normpath(posixpath.join(prefix, raw))
    if not key.startswith(prefix + "/"):
        raise OutsideLocation(f"resolves (through '..') outside the manifest's prefix; {_HINT}")
    return joined(base, key[len(prefix) + 1 :])  # no re-parsing of the prefix (._joins)
