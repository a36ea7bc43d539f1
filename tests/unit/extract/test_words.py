"""The numpy word rule (doccheck.extract._words) equals the regex that defines it.

The price depends on the count (the service bills words by this rule), so the fast version
must agree with ``len(WORD_RE.findall(text))`` on every text, and the matcher's tokens with
``words_of``: hypothesis draws texts rich in the characters where the rule has edges
(joiners, underscores, digits, non-ASCII letters and marks, case changes, final sigma).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from doccheck.extract import WORD_RE, count_words, words_of
from doccheck.extract._words import count_words as fast_count
from doccheck.extract._words import word_tokens

EDGY = "aZ09 _-'’\t\n.,;:!?\"()—–-ßİıΣσςΟΔΟΣé\u0301\u0307日本語١٢٣Ⅻ½²\u00a0\u2028\U0001f600"
TEXTS = st.one_of(
    st.text(alphabet=EDGY, max_size=80),
    st.text(max_size=80),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=120),
    st.text(alphabet="ab-' ", max_size=40),
)


def _reference_count(text: str) -> int:
    return len(WORD_RE.findall(text))


@settings(max_examples=1500, deadline=None)
@given(TEXTS)
def test_count_words_equals_the_regex(text: str) -> None:
    assert fast_count(text) == _reference_count(text)
    assert count_words(text) == _reference_count(text)


@settings(max_examples=1500, deadline=None)
@given(TEXTS)
def test_word_tokens_equal_words_of(text: str) -> None:
    assert word_tokens(text) == [w.encode("utf-8") for w in words_of(text)]


def test_word_rule_edges() -> None:
    cases = {
        "": 0,
        "don't well-known": 2,
        "-- '' ’’": 0,
        "a--b a-'b 'a' -a- a-b-c": 2 + 2 + 1 + 1 + 1,
        "snake_case x_": 3,
        "ΟΔΟΣ Ελλάδα’s": 2,
        "İstanbul café naïve": 3,
        "日本語 text": 2,
    }
    for text, n in cases.items():
        assert count_words(text) == n == _reference_count(text), text
        assert word_tokens(text) == [w.encode("utf-8") for w in words_of(text)], text
    assert word_tokens("ΟΔΟΣ Σ") == ["οδος".encode(), "σ".encode()]  # final sigma as str.lower() per word
    assert count_words("a\ud800b") == _reference_count("a\ud800b")  # a lone surrogate: the regex decides
