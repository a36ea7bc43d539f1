"""The passages two documents of a cohort pair share, found in their texts at report time.

Why: a cohort pair's percentage tells an instructor that two students' work overlaps, not
what overlaps; a panel wants to read the copied sentences side by side. The ledger keeps
32-bit shingle hashes only (never enough to rebuild a text, :mod:`doccheck.matching._shingles`),
so the passages are found here, from the texts themselves, when a page is written. Found once
for a pair's two texts, they are the same as long as both sides' bytes are: the caller may keep
them (:class:`KeptPassages`; the ledger's is ``doccheck.outputs.instructor._evidence_texts.LedgerPassages``)
so that a rerun's page does not read both documents again.

How: both texts are cut into the project's words (:data:`doccheck.extract.WORD_RE`,
lower-cased, as matching does); every :data:`ANCHOR`-word run of the first text that also
occurs in the second is extended word by word as far as both agree; the longest runs of at
least ``min_words`` words are kept. Work per pair is linear and bounded: at most
:data:`MAX_WORDS` words of each text are read, and the first text is scanned once (a match
is skipped past once found). Pure functions: the caller supplies the texts (see
:mod:`doccheck.outputs.instructor._evidence_texts`) and the page escapes what is shown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol
from urllib.parse import quote

from jinja2 import Environment, Template, select_autoescape
from markupsafe import Markup

from doccheck.extract import WORD_RE

__all__ = [
    "ANCHOR",
    "MAX_PAIRS",
    "MAX_PASSAGES",
    "MAX_WORDS",
    "Excerpt",
    "KeptPassages",
    "Passage",
    "PairEvidence",
    "PairTexts",
    "pair_evidence",
    "evidence_section",
    "finder_id",
    "passages_from_json",
    "passages_json",
    "render_evidence",
    "shared_passages",
    "template_grams",
]

#: Words that must agree before a run counts as shared (the shingle length of matching).
ANCHOR = 5
#: Words of each text looked at (a bound on the work per pair; an essay is far shorter).
MAX_WORDS = 20_000
#: Characters of a text looked at (a bound before the words are cut).
MAX_CHARS = 400_000
#: Passages shown per pair: the longest ones (enough for a panel; the files have the rest).
MAX_PASSAGES = 3
#: Characters of one shared passage shown; a longer one ends with "…".
MAX_PASSAGE_CHARS = 700
#: Words of context shown before and after a passage.
CONTEXT_WORDS = 12
#: Pairs whose passages the page shows; the others are counted in a note.
MAX_PAIRS = 50
#: Fewest words of a passage (``shared_passages``' default, the page's).
MIN_WORDS = 8
#: Bumped when the finder finds other passages in the same texts.
FINDER_VERSION = 1

_SPACES = re.compile(r"\s+")
_Token = tuple[str, int, int]  # lower-cased word, start, end (character offsets)


@dataclass(frozen=True)
class Excerpt:
    """One side of a passage: the shared text (``match``, shown highlighted) in its context."""

    before: str
    match: str
    after: str


@dataclass(frozen=True)
class Passage:
    """A run of ``words`` words found in both texts, as it reads in each."""

    words: int
    left: Excerpt
    right: Excerpt


@dataclass(frozen=True)
class PairEvidence:
    """What the page shows of one cohort pair: its passages, or why there are none."""

    pair: Mapping[str, Any]
    passages: Sequence[Passage] = ()
    note: str | None = None


def _tokens(text: str) -> list[_Token]:
    """The first :data:`MAX_WORDS` words of ``text`` (lower-cased) with their offsets."""
    out: list[_Token] = []
    for m in WORD_RE.finditer(text, 0, min(len(text), MAX_CHARS)):
        out.append((m.group().lower(), m.start(), m.end()))
        if len(out) >= MAX_WORDS:
            break
    return out


def _runs(
    a: Sequence[_Token], b: Sequence[_Token], min_words: int, template: Collection[tuple[str, ...]] = ()
) -> list[tuple[int, int, int]]:
    """(length, start in a, start in b) of every maximal shared run found scanning ``a`` once;
    no run starts on, or runs into, a :data:`ANCHOR`-word run of the ``template`` (text every
    student was given, which matching ignores too)."""
    first: dict[tuple[str, ...], int] = {}
    wb = [t[0] for t in b]
    for j in range(len(wb) - ANCHOR + 1):
        first.setdefault(tuple(wb[j : j + ANCHOR]), j)
    wa = [t[0] for t in a]
    runs: list[tuple[int, int, int]] = []
    i = 0
    while i <= len(wa) - ANCHOR:
        gram = tuple(wa[i : i + ANCHOR])
        at = None if gram in template else first.get(gram)
        if at is None:
            i += 1
            continue
        j, k = at, ANCHOR
        while i + k < len(wa) and j + k < len(wb) and wa[i + k] == wb[j + k]:
            if template and tuple(wa[i + k - ANCHOR + 1 : i + k + 1]) in template:
                break
            k += 1
        if k >= min_words:
            runs.append((k, i, j))
        i += k
    return runs


def template_grams(texts: Iterable[str]) -> frozenset[tuple[str, ...]]:
    """The :data:`ANCHOR`-word runs of the texts every student was given (never evidence)."""
    grams: set[tuple[str, ...]] = set()
    for text in texts:
        words = [t[0] for t in _tokens(text)]
        grams.update(tuple(words[i : i + ANCHOR]) for i in range(len(words) - ANCHOR + 1))
    return frozenset(grams)


def _squash(text: str) -> str:
    """Runs of whitespace (line breaks, tabs) as one space: a passage reads as one paragraph."""
    return _SPACES.sub(" ", text)


def _excerpt(text: str, tokens: Sequence[_Token], start: int, length: int, max_chars: int) -> Excerpt:
    """The passage of ``length`` words from word ``start`` with its context, spaces collapsed."""
    begin, end = tokens[start][1], tokens[start + length - 1][2]
    match = _squash(text[begin:end])
    if len(match) > max_chars:
        return Excerpt(_before(text, tokens, start), match[:max_chars].rstrip() + " …", "")
    hi = min(len(tokens), start + length + CONTEXT_WORDS)
    after = _squash(text[end : tokens[hi - 1][2]]) if hi > start + length else ""
    return Excerpt(_before(text, tokens, start), match, after + (" …" if hi < len(tokens) else ""))


def _before(text: str, tokens: Sequence[_Token], start: int) -> str:
    lo = max(0, start - CONTEXT_WORDS)
    return ("… " if lo > 0 else "") + _squash(text[tokens[lo][1] : tokens[start][1]])


def shared_passages(
    left: str,
    right: str,
    *,
    limit: int = MAX_PASSAGES,
    min_words: int = MIN_WORDS,
    max_chars: int = MAX_PASSAGE_CHARS,
    template: Collection[tuple[str, ...]] = (),
) -> list[Passage]:
    """The ``limit`` longest runs of at least ``min_words`` words both texts share, in the
    order they come in ``left``; each side's excerpt is bounded by ``max_chars``.
    ``template``: :func:`template_grams` of the assignment's given text, left out."""
    a, b = _tokens(left), _tokens(right)
    if len(a) < ANCHOR or len(b) < ANCHOR:
        return []
    longest = sorted(_runs(a, b, max(min_words, ANCHOR), template), key=lambda r: (-r[0], r[1]))[: max(0, limit)]
    return [
        Passage(length, _excerpt(left, a, i, length, max_chars), _excerpt(right, b, j, length, max_chars))
        for length, i, j in sorted(longest, key=lambda r: r[1])
    ]


def finder_id() -> str:
    """What the passages of two texts depend on besides them: the finder's version and bounds."""
    bounds = (ANCHOR, MIN_WORDS, MAX_PASSAGES, MAX_PASSAGE_CHARS, CONTEXT_WORDS, MAX_WORDS, MAX_CHARS)
    return f"evidence/{FINDER_VERSION};" + ",".join(map(str, bounds))


def passages_json(passages: Sequence[Passage]) -> str:
    """``passages`` as JSON text (kept by a :class:`KeptPassages`)."""
    sides = [[p.words, [p.left.before, p.left.match, p.left.after], [p.right.before, p.right.match, p.right.after]]
             for p in passages]  # fmt: skip
    return json.dumps(sides, ensure_ascii=False, separators=(",", ":"))


def passages_from_json(text: str) -> list[Passage]:
    """The passages :func:`passages_json` wrote."""
    return [Passage(int(words), Excerpt(*left), Excerpt(*right)) for words, left, right in json.loads(text)]


#: ``text_of(document_id, run_id)``: a document's text (``run_id`` None: this run's), or None.
TextOf = Callable[[str, "str | None"], "str | None"]


class KeptPassages(Protocol):
    """Passages found before for a pair's two texts (the same bytes both sides, the same template)."""

    def passages_of(self, pair: Mapping[str, Any]) -> Sequence[Passage] | None:
        """The pair's passages found before (None: not kept, read its texts)."""
        ...

    def keep(self, pair: Mapping[str, Any], passages: Sequence[Passage]) -> None:
        """Keep the passages just found in the pair's texts."""
        ...


@dataclass(frozen=True)
class PairTexts:
    """How the page reads the pairs' texts, the template text it leaves out of passages, and
    where passages found before are kept (None: found in the texts every time)."""

    text_of: TextOf
    template: frozenset[tuple[str, ...]] = frozenset()
    kept: KeptPassages | None = None


def pair_evidence(
    pairs: Iterable[Mapping[str, Any]],
    text_of: TextOf,
    *,
    max_pairs: int = MAX_PAIRS,
    template: Collection[tuple[str, ...]] = (),
    kept: KeptPassages | None = None,
) -> tuple[list[PairEvidence], int]:
    """The evidence of the first ``max_pairs`` pairs (rows of ``cohort_matches``) and how
    many more pairs there are. A text that cannot be read gives a note, never an error.
    ``kept``: passages found before, used instead of reading the pair's texts, and told of new ones."""
    shown: list[PairEvidence] = []
    more = 0
    for pair in pairs:
        if len(shown) >= max_pairs:
            more += 1
            continue
        known = kept.passages_of(pair) if kept is not None else None
        if known is not None:
            shown.append(PairEvidence(pair, known, None if known else _EDITED))
            continue
        left = text_of(str(pair["document_id"]), None)
        right = text_of(str(pair["matched_document_id"]), pair.get("matched_run_id"))
        if left is None or right is None:
            missing = pair["document_id"] if left is None else pair["matched_document_id"]
            note = f"The text of {missing} could not be read again (file moved, changed or unreadable)."
            shown.append(PairEvidence(pair, note=note))
            continue
        passages = shared_passages(left, right, template=template)
        if kept is not None:
            kept.keep(pair, passages)
        shown.append(PairEvidence(pair, passages, None if passages else _EDITED))
    return shown, more


_EDITED = f"No passage of {MIN_WORDS} words or more is shared word for word (edited text)."


_FILE_LABELS = {"similarity_pdf": "similarity PDF", "pdf": "report PDF", "original": "original"}


@lru_cache(maxsize=1)
def _template() -> Template:
    """The section's template, autoescaping every value (passages are students' text)."""
    folder = resources.files("doccheck.outputs.instructor") / "assets"
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    return env.from_string((folder / "evidence.html.j2").read_text(encoding="utf-8"))


def render_evidence(
    shown: Sequence[PairEvidence],
    more: int,
    files: Mapping[str, Mapping[str, str]] | None = None,
    link_prefix: str = "",
) -> Markup:
    """The page's section of shared passages (empty when no pair is shown).

    ``files``: document_id → {kind: path relative to the run folder} (the files downloaded
    beside the page), linked before each pair's passages with ``link_prefix`` in front.
    """
    if not shown:
        return Markup("")
    files = files or {}
    items = []
    for e in shown:
        left, right = str(e.pair["document_id"]), str(e.pair["matched_document_id"])
        links = [
            {"href": link_prefix + quote(path), "label": f"{doc} {_FILE_LABELS.get(kind, kind)}"}
            for doc in (left, right) if not (doc == right and e.pair.get("matched_run_id"))
            for kind, path in files.get(doc, {}).items()
        ]  # fmt: skip
        items.append({"left_id": left, "right_id": right, "right_run": e.pair.get("matched_run_id"),
                      "kind": str(e.pair.get("kind") or "").replace("_", " "), "percent": e.pair.get("percent"),
                      "matched_percent": e.pair.get("matched_percent"), "links": links, "note": e.note,
                      "passages": e.passages})  # fmt: skip
    html = _template().render(shown=items, more=more, max_passages=MAX_PASSAGES, max_chars=MAX_PASSAGE_CHARS)
    return Markup(html)  # noqa: S704 - rendered with autoescaping on


def evidence_section(
    pairs: Sequence[Mapping[str, Any]] | None,
    texts_for: Callable[[Sequence[Mapping[str, Any]]], PairTexts] | None,
    files_of: Callable[[Iterable[str]], Mapping[str, Mapping[str, str]]],
    link_prefix: str = "",
    *,
    max_pairs: int = MAX_PAIRS,
) -> Markup:
    """The page's evidence section for a run's cohort ``pairs``: ``texts_for(shown pairs)``
    gives the texts' reader (only those pairs' documents are looked up), ``files_of(ids)``
    the files beside the page. Empty without pairs or without a way to read texts."""
    if not pairs or texts_for is None:
        return Markup("")
    first = list(pairs[:max_pairs])
    texts = texts_for(first)
    shown, _ = pair_evidence(first, texts.text_of, max_pairs=max_pairs, template=texts.template, kept=texts.kept)
    ids = {str(p[k]) for p in first for k in ("document_id", "matched_document_id")}
    return render_evidence(shown, len(pairs) - len(shown), files_of(sorted(ids)), link_prefix)
