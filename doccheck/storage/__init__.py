"""The storage seam: every file of the user's (a manifest, a document, an LMS export, a report) is
reached through here, so that a URL (``s3://``, ``gs://``, ``az://``/``abfs://``, ``file://``; fsspec's
``memory://`` in tests) works wherever a path does (docs/storage.md).

- :func:`resolve` turns what the user wrote into a :data:`UserPath`: a :class:`pathlib.Path` for a
  bare path (nothing changes for a local term), a :class:`upath.UPath` over fsspec for a URL, with
  the store's options (:mod:`._options`: retries from the store's own library, the settings'
  ``DOCCHECK_STORAGE_OPTIONS``); a URL carrying a credential is refused. :func:`display` is how a
  location is shown (:func:`file_name` its last part), :func:`is_remote` whether it is on a store.
- :func:`child` joins a row's path to its manifest's location and refuses one that leaves it.
- :class:`Listing` answers "exists? how large? changed?" from one LIST of a prefix; :func:`describe`
  asks it of one file.
- :func:`open_input` streams a file in blocks, :func:`read_bounded` reads a small one whole;
  :func:`local_copy` gives a parser a bounded local copy (on S3 these reads, the listing and
  :func:`describe` go through obstore, :mod:`._object_reads` and :mod:`._s3_store`; everything
  else goes through fsspec); :func:`as_storage_error` makes what a store's library raises
  (:func:`store_errors`) a :class:`~doccheck.errors.StorageError`.
- :func:`open_output`, :func:`write_bytes` and :func:`upload_tree` publish whole objects, a folder's
  marker last; :func:`remove_tree` purges; :func:`arrow_filesystem` hands pyarrow the filesystem.
- :func:`publish_tree` replaces a folder of outputs behind its marker; :func:`subfolders` and
  :func:`files_under` list a folder in one request; :func:`copy_file` copies inside a store;
  :func:`scratch_folder` is the local folder where work for a store's location is done.
- :func:`share_link` links an output for a person elsewhere: the object's URL, or a presigned one.
- :func:`spooling` keeps, for a run, the bytes planning read of a store's files (a small one in
  memory, others on the local disk; capped) and :func:`spool` adds to it: the file's read when sent takes them (:func:`take_spooled`)
  instead of a GET.

This ``__init__`` imports nothing on its own: each name is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from doccheck._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from doccheck.storage._confine import child
    from doccheck.storage._copies import (
        BLOCK_BYTES,
        as_storage_error,
        copy_to_local,
        local_copy,
        open_input,
        read_bounded,
    )
    from doccheck.storage._links import ShareLink, share_link
    from doccheck.storage._listing import Entry, Listing, describe
    from doccheck.storage._locations import UserPath, display, file_name, is_remote, is_url, resolve, store_errors
    from doccheck.storage._options import storage_options
    from doccheck.storage._spool import spool, spooling, take_spooled
    from doccheck.storage._trees import copy_file, files_under, publish_tree, scratch_folder, subfolders
    from doccheck.storage._writes import arrow_filesystem, open_output, remove_tree, upload_tree, write_bytes

__all__ = [
    "BLOCK_BYTES",
    "Entry",
    "Listing",
    "ShareLink",
    "UserPath",
    "arrow_filesystem",
    "as_storage_error",
    "child",
    "copy_file",
    "copy_to_local",
    "describe",
    "display",
    "file_name",
    "files_under",
    "is_remote",
    "is_url",
    "local_copy",
    "open_input",
    "open_output",
    "read_bounded",
    "publish_tree",
    "remove_tree",
    "resolve",
    "scratch_folder",
    "share_link",
    "spool",
    "spooling",
    "storage_options",
    "store_errors",
    "subfolders",
    "take_spooled",
    "upload_tree",
    "write_bytes",
]

#: Name → the private module that defines it, imported by ``__getattr__`` on first use.
_LAZY = {
    "BLOCK_BYTES": "_copies",
    "Entry": "_listing",
    "Listing": "_listing",
    "ShareLink": "_links",
    "UserPath": "_locations",
    "arrow_filesystem": "_writes",
    "as_storage_error": "_copies",
    "child": "_confine",
    "copy_to_local": "_copies",
    "describe": "_listing",
    "display": "_locations",
    "file_name": "_locations",
    "is_remote": "_locations",
    "is_url": "_locations",
    "local_copy": "_copies",
    "open_input": "_copies",
    "open_output": "_writes",
    "read_bounded": "_copies",
    "remove_tree": "_writes",
    "resolve": "_locations",
    "storage_options": "_options",
    "store_errors": "_locations",
    "copy_file": "_trees",
    "files_under": "_trees",
    "publish_tree": "_trees",
    "scratch_folder": "_trees",
    "share_link": "_links",
    "spool": "_spool",
    "spooling": "_spool",
    "take_spooled": "_spool",
    "subfolders": "_trees",
    "upload_tree": "_writes",
    "write_bytes": "_writes",
}


__getattr__ = _lazy_getattr(__name__, _LAZY)
