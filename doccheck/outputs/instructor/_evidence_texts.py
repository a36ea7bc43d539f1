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
file confined to the manifest's prefix as the run confined it, fetched once (a bounded GET of
the size the run recorded: no HEAD first). A manifest is read only once a text of it is wanted.

A pair's passages, once found, are kept in the ledger (:class:`LedgerPassages`, issue 48): by
campaign and the SHA-256 of both sides' bytes as their runs recorded them, which the passages
cannot outlive, and a ``basis`` digesting the rest they depend on (the finder's bounds, the
extractor, the template text). So a rerun's page with nothing changed reads no document: it used
to read both sides of every shown pair again (a HEAD and a GET each from a bucket). Passages
rather than texts: what the page publishes anyway, at most three bounded excerpts a pair, where
a text is a whole essay; the ledger keeps no document's text. A pair whose passages are kept is
shown from them even if its files have gone since: they are the words of the bytes the run checked.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from doccheck.errors import ExtractionError, ManifestError
from doccheck.extract import extract_text
from doccheck.outputs.instructor._evidence import (
    PairTexts,
    Passage,
    finder_id,
    passages_from_json,
    passages_json,
    template_grams,
)
from doccheck.sources.manifest import MAX_FILE_BYTES, read_rows  # the raw rows: no file is hashed or extracted
from doccheck.storage import UserPath, child, read_bounded, resolve

__all__ = ["LedgerPassages", "ManifestTexts", "manifest_texts", "templates_of"]

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
        self._wanted: dict[str, set[str]] = {}
        for p in pairs:
            self._wanted.setdefault(run_id, set()).add(str(p["document_id"]))
            self._wanted.setdefault(str(p.get("matched_run_id") or run_id), set()).add(str(p["matched_document_id"]))
        self._cells: dict[_Key, tuple[UserPath, str | None, str | None]] = {}
        self._located: set[str] = set()  # the runs whose manifest was read
        self._recorded: dict[_Key, tuple[str | None, int | None]] = {}
        for rid, ids in self._wanted.items():
            self._recorded.update(_recorded(ledger, rid, ids))
        self._texts: OrderedDict[_Key, str | None] = OrderedDict()

    def hash_of(self, document_id: str, run_id: str | None) -> str | None:
        """The SHA-256 of the document's bytes as its run recorded them (None: unknown)."""
        return self._recorded.get((run_id or self._run_id, document_id), (None, None))[0]

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
        if key[0] not in self._located:
            self._located.add(key[0])
            self._locate(key[0], self._wanted.get(key[0], set()))
        cell = self._cells.get(key)
        if cell is None:
            return None
        folder, raw_path, text = cell
        raw_path = (raw_path or "").strip()
        digest, size = self._recorded.get(key, (None, None))
        if not raw_path:
            if text is None or digest != _sha256(text.encode("utf-8", "surrogatepass")):
                return None
            return text
        try:
            path = _confined(folder, raw_path)
            data = read_bounded(path, max_bytes=MAX_FILE_BYTES, size=size) if path is not None else None
            if path is None or data is None or digest != _sha256(data):
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


def _recorded(ledger: Any, run_id: str, ids: set[str]) -> dict[_Key, tuple[str | None, int | None]]:
    """The content hash and size each document had when the run read it."""
    from doccheck.ledger import document_hashes

    with ledger.session() as s:
        return {(run_id, doc): found for doc, found in document_hashes(s, run_id, ids).items()}


class LedgerPassages:
    """The pairs' passages kept in the ledger (``doccheck.ledger.kept_passages``), by ``campaign``,
    the SHA-256 of both sides' bytes as their runs recorded them (``texts.hash_of``) and ``basis``;
    those of ``pairs`` looked up at once (one query), new ones kept as found by ``run_id``."""

    def __init__(
        self, ledger: Any, campaign: str, run_id: str, texts: ManifestTexts, basis: str,
        pairs: Iterable[Mapping[str, Any]],
    ) -> None:  # fmt: skip
        from doccheck.ledger import kept_passages

        self._ledger, self._campaign, self._run_id, self._texts, self._basis = ledger, campaign, run_id, texts, basis
        keys = [key for pair in pairs if (key := self._key(pair)) is not None]
        self._known: dict[tuple[str, str, str], str] = {}
        if keys:
            with ledger.engine.connect() as conn:
                self._known = kept_passages(conn, campaign, keys)

    def _key(self, pair: Mapping[str, Any]) -> tuple[str, str, str] | None:
        left = self._texts.hash_of(str(pair["document_id"]), None)
        right = self._texts.hash_of(str(pair["matched_document_id"]), pair.get("matched_run_id"))
        return None if left is None or right is None else (left, right, self._basis)

    def passages_of(self, pair: Mapping[str, Any]) -> list[Passage] | None:
        """The pair's passages kept before, None when not kept."""
        key = self._key(pair)
        found = self._known.get(key) if key is not None else None
        return None if found is None else passages_from_json(found)

    def keep(self, pair: Mapping[str, Any], passages: Sequence[Passage]) -> None:
        """Keep the passages just found in the pair's texts (both checked against the recorded hashes)."""
        from doccheck.ledger import keep_passages

        key = self._key(pair)
        if key is None or key in self._known:
            return
        self._known[key] = passages_json(passages)
        with self._ledger.engine.begin() as conn:
            keep_passages(conn, self._campaign, self._run_id, {key: self._known[key]})


def passages_basis(templates: Sequence[str]) -> str:
    """What a pair's passages depend on besides its two texts (hex SHA-256): the finder's version
    and bounds, the extractor that read the files, and the template text left out of passages."""
    from doccheck.extract.cache import extractor_id

    return _sha256(json.dumps([finder_id(), extractor_id(), *templates]).encode("utf-8", "surrogatepass"))


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
    """The pairs' texts from the runs' manifests, the run's template text to leave out, and the
    passages kept in the ledger for the pairs whose texts are unchanged."""
    pairs = list(pairs)
    run = ledger.get_run(run_id)
    texts = [t for t in map(_template_text, templates_of(run.params if run is not None else None)) if t]
    manifest = ManifestTexts(ledger, run_id, pairs)
    kept = None
    if run is not None and getattr(ledger, "engine", None) is not None:
        kept = LedgerPassages(ledger, run.campaign, run_id, manifest, passages_basis(texts), pairs)
    return PairTexts(manifest, template_grams(texts), kept)
