"""The bundled reference corpus (``reference/*.txt``) indexed once for similarity.

Each file starts with ``Title:`` and ``URL:`` lines, a blank line, then the text. The
texts are short originals written for the emulator, so matches against them are honest
and license-free.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from doccheck.emulator._similarity import ShingleIndex, SourceInfo
from doccheck.extract import words_of


def _parse(name: str, raw: str) -> tuple[SourceInfo, str]:
    head, _, body = raw.partition("\n\n")
    meta = {}
    for line in head.splitlines():
        key, _, value = line.partition(":")
        meta[key.strip().lower()] = value.strip()
    stem = name.rsplit(".", 1)[0]
    info = SourceInfo(
        source_id=f"ref-{stem}",
        title=meta.get("title", stem),
        url=meta.get("url") or None,
        kind="reference",
        seq=-1,
    )
    return info, body


@lru_cache(maxsize=1)
def reference_index() -> ShingleIndex:
    """The shared, read-only index of the reference texts."""
    index = ShingleIndex()
    folder = resources.files("doccheck.emulator").joinpath("reference")
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".txt"):
            info, body = _parse(entry.name, entry.read_text(encoding="utf-8"))
            index.add(info, words_of(body))
    return index


def reference_text(source_id: str) -> str | None:
    """The body of one reference text (tests use it to build a matching submission)."""
    folder = resources.files("doccheck.emulator").joinpath("reference")
    entry = folder.joinpath(source_id.removeprefix("ref-") + ".txt")
    if not entry.is_file():
        return None
    return _parse(entry.name, entry.read_text(encoding="utf-8"))[1]
