"""A deterministic stylometric HEURISTIC standing in for AI detection. It is not a detector.

The emulator needs an AI score that is stable (same text, same score), cheap, and that
moves in a plausible direction, so that pipelines and reports can be exercised end to
end. It combines three surface signals, each mapped to 0..1:

* uniformity: machine-generated prose tends to have sentences of similar length, so a low
  coefficient of variation of sentence length ("burstiness") raises the score;
* marker density: stock connectives and buzzwords ("furthermore", "moreover", "crucial",
  "delve", ...) per word raise the score;
* informality: contractions, first-person pronouns, questions and exclamations lower it.

``score = 0.45·uniformity + 0.40·markers + 0.15·(1 − informality)``, rounded to 4 places;
labels: ``human`` below 0.40, ``mixed`` below 0.70, ``ai`` otherwise. Only the first
200,000 characters are read (style does not change with length; the cost would). Never use
it to judge a real person's work.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from doccheck.extract import words_of

HUMAN_BELOW = 0.40
MIXED_BELOW = 0.70
METHOD = "emulator-stylometric-heuristic-v1"
MAX_CHARS = 200_000

_MARKERS = frozenset(
    [
        "furthermore",
        "moreover",
        "additionally",
        "consequently",
        "overall",
        "notably",
        "crucial",
        "essential",
        "pivotal",
        "delve",
        "delves",
        "delving",
        "comprehensive",
        "robust",
        "seamless",
        "seamlessly",
        "leverage",
        "leveraging",
        "foster",
        "fostering",
        "realm",
        "tapestry",
        "landscape",
        "multifaceted",
        "paramount",
        "significant",
        "significantly",
        "various",
        "ensure",
        "ensuring",
        "enhance",
        "enhancing",
        "utilize",
        "utilizing",
        "facilitate",
        "holistic",
        "nuanced",
        "intricate",
        "underscore",
        "underscores",
        "navigate",
        "navigating",
        "vital",
    ]
)
_MARKER_PHRASES = ("it is important to note", "in conclusion", "in today's", "plays a crucial role", "in summary")
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "we", "us", "our"})
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n{2,}")


@dataclass(frozen=True)
class AiVerdict:
    """Score in 0..1, its label, and the signals it came from (for the docs and tests)."""

    score: float
    label: str
    uniformity: float
    markers: float
    informality: float


def _clamp(x: float) -> float:
    return max(0.0, min(1.0, x))


def label_for(score: float) -> str:
    """``human`` | ``mixed`` | ``ai`` by the documented thresholds."""
    if score < HUMAN_BELOW:
        return "human"
    if score < MIXED_BELOW:
        return "mixed"
    return "ai"


def score_text(text: str) -> AiVerdict:
    """The heuristic verdict for ``text`` (deterministic, pure)."""
    text = text[:MAX_CHARS]
    words = words_of(text)
    n = max(len(words), 1)
    lengths = [n for n in (len(words_of(s)) for s in _SENTENCE_SPLIT.split(text.strip())) if n]
    if len(lengths) >= 3:
        mean = statistics.fmean(lengths)
        cv = statistics.pstdev(lengths) / mean if mean else 0.0
        uniformity = _clamp(1.0 - cv / 0.8)
    else:
        uniformity = 0.5  # too few sentences to say anything
    lowered = text.lower()
    marker_hits = sum(1 for w in words if w in _MARKERS) + sum(lowered.count(p) for p in _MARKER_PHRASES)
    markers = _clamp(marker_hits / n * 40)
    informal_hits = (
        sum(1 for w in words if "'" in w or "’" in w)
        + sum(1 for w in words if w in _FIRST_PERSON)
        + text.count("?")
        + text.count("!")
    )
    informality = _clamp(informal_hits / n * 20)
    score = round(0.45 * uniformity + 0.40 * markers + 0.15 * (1.0 - informality), 4)
    return AiVerdict(score, label_for(score), round(uniformity, 4), round(markers, 4), round(informality, 4))
