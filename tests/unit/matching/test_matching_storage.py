"""Cohort matching reads a document on a store (issue 48) through the storage seam: its path a
``UPath`` in the run's process, the location's text (``display``) in the background process, and
a template file at a URL."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from fsspec.implementations.memory import MemoryFileSystem

from doccheck.matching import MatchOptions, match_cohort
from doccheck.storage import display, resolve
from tests.fixtures.memory_bucket import Requests
from tests.matching_corpus import essay

Bucket = tuple[MemoryFileSystem, Requests]


@dataclass(frozen=True)
class Doc:
    document_id: str
    content_hash: str
    path: Any
    text: str | None = None


def test_documents_on_a_store_are_matched(bucket: Bucket) -> None:
    fs, requests = bucket
    shared = essay(random.Random(7))
    fs.pipe({"/term/c/a.txt": shared.encode(), "/term/c/b.txt": shared.encode(), "/term/c/t.txt": b"the prompt"})
    docs = [Doc(k, hashlib.sha256(shared.encode()).hexdigest() + k, resolve(f"memory://term/c/{k}.txt")) for k in "ab"]
    options = MatchOptions(template_files=("memory://term/c/t.txt",))
    result = match_cohort(docs, campaign="c", run_id="r", options=options)
    assert {frozenset({p["document_id"], p["matched_document_id"]}) for p in result.pairs} == {frozenset("ab")}
    assert result.skipped == []
    assert requests.gets["/term/c/a.txt"] == 1 and requests.gets["/term/c/t.txt"] == 1
    # a path as the background process receives it: the location as text, resolved again
    again = match_cohort([Doc("a", "x", display(docs[0].path)), Doc("b", "y", "memory://term/c/b.txt")],
                         campaign="c2", run_id="r")  # fmt: skip
    assert len(again.pairs) == 1


def test_a_document_gone_from_the_store_is_skipped(bucket: Bucket) -> None:
    fs, _ = bucket
    fs.pipe({"/term/c/a.txt": essay(random.Random(3)).encode()})
    docs = [Doc("a", "h1", resolve("memory://term/c/a.txt")), Doc("b", "h2", resolve("memory://term/c/gone.txt"))]
    result = match_cohort(docs, campaign="c", run_id="r")
    assert [s["document_id"] for s in result.skipped] == ["b"]
