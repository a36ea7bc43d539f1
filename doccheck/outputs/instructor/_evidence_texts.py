"""The texts of a few documents, read again from their runs' manifests when a page is written.

Why: the ledger never keeps a document's text (only counts, hashes and 32-bit shingles),
and the evidence of a cohort pair must be the words the students handed in. Each run
records the manifest it read (``runs.manifest``); a document's text is its inline ``text``
cell or the file its ``path`` cell names, confined to the manifest's folder as when the run
read it. The bytes are hashed and compared with the hash the run recorded: a file changed
or replaced since the run gives no evidence (the page says so) rather than passages the
student never submitted. Bounded: only the documents of the pairs shown are looked up (one
streamed pass over each manifest, keeping those rows' cells), each file is read under the
manifest's size limit and the extraction limits, and at most a few texts are kept at once.
A manifest at a URL (``s3://...``) and its files are read through ``doccheck.storage``: a row's
file confined to the manifest's prefix as the run confined it, fetched once (a bounded GET).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from doccheck.errors import ExtractionError, ManifestError
from doccheck.extract import extract_text
from doccheck.outputs.instructor._evidence import PairTexts, template_grams
from doccheck.sources.manifest import MAX_FILE_BYTES, read_rows  # the raw rows: no file is hashed or extracted
from doccheck.storage import UserPath, child, read_bounded, resolve

__all__ = ["ManifestTexts", "manifest_texts", "templates_of"]

#: Texts kept read at once (a document is often in several pairs, listed together).
_CACHE = 8

_Key = tuple[str, str]  # (run_id, document_id)


class ManifestTexts:
    """``text_of(document_id, run_id)`` for :func:`doccheck.outputs.instructor._evidence.pair_evidence`.

    ``run_id`` is the run whose page is written; a pair's ``matched_run_id`` names an
    earlier run of the campaign, whose own manifest is read.
    """

    def __init__(self, ledger: Any, run_id: str, pairs: Iterable[Mapping[str, Any]]) -> None:
        self._ledger, self._run_id = ledger, run_id
        wanted: dict[str, set[str]] = {}
        for p in pairs:
            wanted.setdefault(run_id, set()).add(str(p["document_id"]))
            wanted.setdefault(str(p.get("matched_run_id") or run_id), set()).add(str(p["matched_document_id"]))
        self._cells: dict[_Key, tuple[UserPath, str | None, str | None]] = {}
        self._hashes: dict[_Key, str | None] = {}
        for rid, ids in wanted.items():
            self._locate(rid, ids)
        self._texts: OrderedDict[_Key, str | None] = OrderedDict()

    def _locate(self, run_id: str, ids: set[str]) -> None:
        """Keep the ``path``/``text`` cells of ``ids`` from the run's manifest, and their hashes."""
        run = self._ledger.get_run(run_id)
        if run is None or not run.manifest:
            return
        try:
            source = resolve(run.manifest)
            _, rows = read_rows(source, wanted=("path", "text"))
            folder = source.resolve().parent if isinstance(source, Path) else source.parent
            for _, row in rows:
                if not isinstance(row, dict):
                    continue  # a row the reader could not read: the run rejected it too
                doc = row.get("document_id")
                if doc is not None and doc in ids and (run_id, doc) not in self._cells:
                    self._cells[(run_id, doc)] = (folder, row.get("path"), row.get("text"))
        except (ManifestError, OSError, ValueError):
            return  # the manifest moved or is unreadable: no evidence for its documents
        self._hashes.update(_recorded_hashes(self._ledger, run_id, ids))

    def __call__(self, document_id: str, run_id: str | None) -> str | None:
        key = (run_id or self._run_id, document_id)
        if key in self._texts:
            self._texts.move_to_end(key)
            return self._texts[key]
        text = self._read(key)
        self._texts[key] = text
        if len(self._texts) > _CACHE:
            self._texts.popitem(last=False)
        return text

    def _read(self, key: _Key) -> str | None:
        """The document's text when its bytes are still those the run sent, else None."""
        cell = self._cells.get(key)
        if cell is None:
            return None
        folder, raw_path, text = cell
        raw_path = (raw_path or "").strip()
        if not raw_path:
            if text is None or self._hashes.get(key) != _sha256(text.encode("utf-8", "surrogatepass")):
                return None
            return text
        try:
            path = _confined(folder, raw_path)
            data = read_bounded(path, max_bytes=MAX_FILE_BYTES) if path is not None else None
            if path is None or data is None or self._hashes.get(key) != _sha256(data):
                return None
            return extract_text(data, path.name)
        except (OSError, ExtractionError):
            return None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _confined(folder: UserPath, raw_path: str) -> UserPath | None:
    """The file ``raw_path`` names inside the manifest's folder or prefix (as the manifest reader
    confines it: ``doccheck.storage.child``), or None. A local one must be a file within the size
    limit; a store's is not asked first (its bounded read refuses a large or missing one)."""
    if not raw_path or "\x00" in raw_path:
        return None
    try:
        path = child(folder, raw_path)  # OutsideLocation (an OSError) for one that leaves it
        if isinstance(path, Path) and (not path.is_file() or path.stat().st_size > MAX_FILE_BYTES):
            return None
    except (OSError, RuntimeError):
        return None
    return path


def _recorded_hashes(ledger: Any, run_id: str, ids: set[str]) -> dict[_Key, str | None]:
    """The content hash each document had when the run read it."""
    from doccheck.ledger import document_hashes

    with ledger.session() as s:
        return {(run_id, doc): digest for doc, digest in document_hashes(s, run_id, ids).items()}


def templates_of(params: Mapping[str, Any] | None) -> list[str]:
    """The template files a run named (``--template``), from its recorded parameters: the
    flow records ``templates``, the command and the notebook their whole options (``source``)."""
    params = params or {}
    found = params.get("templates")
    if found is None and isinstance(params.get("source"), Mapping):
        found = params["source"].get("templates")
    return [str(t) for t in found or [] if t]


def _template_text(path: str) -> str | None:
    """A template file's text (the run read it already; unreadable now: left out)."""
    try:
        file = resolve(path)
        if isinstance(file, Path) and (not file.is_file() or file.stat().st_size > MAX_FILE_BYTES):
            return None
        return extract_text(read_bounded(file, max_bytes=MAX_FILE_BYTES), file.name)
    except (OSError, ExtractionError):
        return None


def manifest_texts(ledger: Any, run_id: str, pairs: Iterable[Mapping[str, Any]]) -> PairTexts:
    """The pairs' texts from the runs' manifests, and the run's template text to leave out."""
    run = ledger.get_run(run_id)
    texts = [t for t in map(_template_text, templates_of(run.params if run is not None else None)) if t]
    return PairTexts(ManifestTexts(ledger, run_id, pairs), template_grams(texts))
