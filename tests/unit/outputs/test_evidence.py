"""The shared passages of a cohort pair: found in hand-made texts, bounded, escaped, and read
again from the run's manifest only while the files still hold what was checked."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from doccheck.ledger import DocumentRow, Ledger
from doccheck.outputs.instructor._evidence import (
    MAX_PASSAGES,
    MAX_WORDS,
    PairTexts,
    evidence_section,
    pair_evidence,
    render_evidence,
    shared_passages,
    template_grams,
)
from doccheck.outputs.instructor._evidence_texts import ManifestTexts

SHARED = (
    "The industrial revolution changed the relation between labour and time, because the factory clock "
    "replaced the rhythm of the seasons as the measure of a working day"
)
LEFT = f"My essay begins with a question about cities. {SHARED}. Then I argue something else entirely."
RIGHT = f"Historians disagree on many points, yet {SHARED}; this is the view I defend below in detail."


def _words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def test_the_known_shared_passage_is_found_on_both_sides() -> None:
    [passage] = shared_passages(LEFT, RIGHT)
    assert passage.words == len(SHARED.split())
    assert passage.left.match == SHARED and passage.right.match == SHARED
    assert passage.left.before.endswith("about cities. ") and passage.left.after.startswith(". Then I argue")
    assert passage.right.before.startswith("Historians") and passage.right.after.startswith("; this is the view")


def test_unrelated_texts_and_short_common_phrases_share_nothing() -> None:
    assert shared_passages(_words(200, "a"), _words(200, "b")) == []
    # five common words (one shingle) are not a passage: 8 words at least
    assert shared_passages("we went to the end of it all", "at the end of it we stopped") == []


def test_the_longest_passages_are_kept_in_the_order_of_the_first_text() -> None:
    parts = [_words(10 + 5 * k, f"p{k}x") for k in range(5)]  # 10, 15, 20, 25, 30 words
    left = " filler words here. ".join(parts)
    right = " other joins there. ".join(reversed(parts))
    passages = shared_passages(left, right)
    assert len(passages) == MAX_PASSAGES
    assert [p.words for p in passages] == [20, 25, 30]  # the three longest, in left's order


def test_work_and_output_are_bounded() -> None:
    tail = _words(40, "t")
    huge = _words(MAX_WORDS, "w") + " " + tail  # the tail lies past the words looked at
    assert shared_passages(huge, tail) == []
    long = _words(3000, "x")
    [passage] = shared_passages(long, long, max_chars=200)
    assert passage.words == 3000
    assert len(passage.left.match) <= 202 and passage.left.match.endswith("…") and passage.left.after == ""


def test_hostile_markup_in_a_passage_shows_as_text() -> None:
    evil = '<script>window.__pwned = true</script> <img src=x onerror="alert(1)"> '
    left = "Intro words. " + SHARED + " " + evil + SHARED + " end."
    right = "Other start. " + SHARED + " " + evil + SHARED + " finish."
    shown, more = pair_evidence([{"document_id": "d1", "matched_document_id": "d2", "kind": "near_duplicate",
                                  "percent": 80.0, "matched_percent": 75.0}],
                                lambda doc, run: left if doc == "d1" else right)  # fmt: skip
    assert more == 0 and "<script>" in shown[0].passages[0].left.match
    html = str(render_evidence(shown, more, {"d1": {"original": "files/d1.original.txt"}}, "../run/"))
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;window.__pwned = true&lt;/script&gt;" in html
    assert re.search(r"<mark>[^<]*&lt;script&gt;", html)
    assert '<a href="../run/files/d1.original.txt">' in html


def test_pairs_are_capped_with_a_count_and_unreadable_texts_give_a_note() -> None:
    pairs = [{"document_id": f"a{i}", "matched_document_id": f"b{i}", "kind": "copied_section"} for i in range(7)]
    asked: list[str] = []

    def texts_for(shown: Sequence[Mapping[str, Any]]) -> PairTexts:
        asked.extend(p["document_id"] for p in shown)
        return PairTexts(lambda doc, run: None if doc == "b0" else LEFT)

    html = str(evidence_section(pairs, texts_for, lambda ids: {}, "", max_pairs=3))
    assert asked == ["a0", "a1", "a2"]  # only the shown pairs' texts are looked up
    # the intro shows one highlighted word; two readable pairs of one passage each, both sides marked
    assert html.count("<article") == 3 and html.count("<mark>") == 1 + 2 * 2
    assert "The text of b0 could not be read again" in html
    assert "4 more pairs are not shown here" in html
    assert str(evidence_section([], texts_for, lambda ids: {})) == ""
    assert str(evidence_section(pairs, None, lambda ids: {})) == ""


def _record(ledger: Ledger, run_id: str, doc: str, data: bytes) -> None:
    with ledger.session() as s:
        s.add(DocumentRow(run_id=run_id, campaign="c", document_id=doc, idempotency_key=f"k-{run_id}-{doc}",
                          content_hash=hashlib.sha256(data).hexdigest()))  # fmt: skip
        s.commit()


def test_texts_are_read_again_from_the_manifest_only_while_unchanged(ledger: Ledger, tmp_path: Path) -> None:
    (tmp_path / "essays").mkdir()
    (tmp_path / "essays" / "d1.txt").write_text(LEFT, encoding="utf-8")
    (tmp_path / "essays" / "d3.txt").write_text(RIGHT, encoding="utf-8")
    (tmp_path / "secret.txt").write_text(RIGHT, encoding="utf-8")
    manifest = tmp_path / "essays" / "manifest.csv"
    manifest.write_text(
        f'document_id,path,text\nd1,d1.txt,\nd2,,"{RIGHT}"\nd3,d3.txt,\nd4,../secret.txt,\n',
        encoding="utf-8",
    )
    run = ledger.start_run(campaign="c", manifest=str(manifest))
    _record(ledger, run, "d1", LEFT.encode())
    _record(ledger, run, "d2", RIGHT.encode())
    _record(ledger, run, "d3", RIGHT.encode())
    _record(ledger, run, "d4", RIGHT.encode())
    (tmp_path / "essays" / "d3.txt").write_text(RIGHT + " edited later", encoding="utf-8")
    pairs = [{"document_id": "d1", "matched_document_id": d} for d in ("d2", "d3", "d4", "d9")]
    texts = ManifestTexts(ledger, run, pairs)
    assert texts("d1", None) == LEFT  # a file of the manifest's folder
    assert texts("d2", run) == RIGHT  # an inline text
    assert texts("d3", None) is None  # changed since the run: not what was checked
    assert texts("d4", None) is None  # outside the manifest's folder
    assert texts("d9", None) is None  # not in the manifest
    assert ManifestTexts(ledger, "no-such-run", pairs)("d1", None) is None


def test_the_assignment_text_every_student_was_given_is_not_evidence() -> None:
    given = "Answer the question: how did the factory change the working day in nineteenth century Britain"
    left = f"{given}. My own answer starts here and is different. {SHARED}."
    right = f"{given}. Another answer that has its own words. {SHARED}!"
    assert [p.words for p in shared_passages(left, right)] == [len(given.split()), len(SHARED.split())]
    [passage] = shared_passages(left, right, template=template_grams([given]))
    assert passage.left.match == SHARED
