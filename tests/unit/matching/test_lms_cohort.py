"""A student's own files never pair with each other in cohort matching; two students' files do."""

from __future__ import annotations

import random
from dataclasses import dataclass

from doccheck.domain import document_owner
from doccheck.matching import match_cohort
from doccheck.sources.lms import make_document_id
from tests.matching_corpus import essay


@dataclass(frozen=True)
class Doc:
    document_id: str
    text: str

    @property
    def content_hash(self) -> str:
        import hashlib

        return hashlib.sha256(self.text.encode()).hexdigest()


def test_own_files_never_pair_but_other_students_do() -> None:
    text = essay(random.Random(7))
    mine_a = make_document_id("moodle", "101", "draft.txt")
    mine_b = make_document_id("moodle", "101", "final.txt")
    theirs = make_document_id("moodle", "102", "essay.txt")
    assert document_owner(mine_a) == document_owner(mine_b) != document_owner(theirs)
    result = match_cohort([Doc(mine_a, text), Doc(mine_b, text), Doc(theirs, text)], campaign="c", run_id="r")
    paired = {frozenset((p["document_id"], p["matched_document_id"])) for p in result.pairs}
    assert paired == {frozenset((mine_a, theirs)), frozenset((mine_b, theirs))}


def test_manifest_ids_are_their_own_owner() -> None:
    assert document_owner("s-01") == "s-01"
    assert document_owner("moodle-not-an-lms-id") == "moodle-not-an-lms-id"
