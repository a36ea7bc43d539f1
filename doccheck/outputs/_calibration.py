"""Expected false flags: how many AI flags a cohort would get even if every student wrote their own work.

An AI score alone never decides (DESIGN.md, invariant 10). Detectors misclassify human writing at
rates that matter (Liang et al. 2023; Vanderbilt 2023: 1 % of 75,000 papers is 750 students), and
the vendors refuse to judge short texts. So this module holds the three rules the report states:

- the length gate: a document under ``min_words`` is "too short to judge" and never AI-flagged;
- the bands: ``too_short``, ``low``, ``elevated``, ``high`` from stated bounds;
- the base rate: from a reference campaign of known-human work, the empirical false-flag rate at
  the threshold with an exact (Clopper-Pearson) 95 % interval from scipy, scaled to this run's
  judged documents. Without a reference the rate is unknown and nothing is invented.

Pure functions over plain numbers: no ledger, no Prefect, tested against scipy and by hand.
:class:`AiRules` bundles the run's settings (``OutputOptions``' AI fields) for the report writer.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BANDS = ("too_short", "low", "elevated", "high")
"""The values of ``ai_band``, in order of concern."""


@dataclass(frozen=True)
class BandBounds:
    """Where the bands start: ``low`` below ``elevated``, ``high`` from ``high`` up (scores 0..1)."""

    min_words: int = 300
    elevated: float = 0.5
    high: float = 0.8

    def __post_init__(self) -> None:
        if self.min_words < 0:
            raise ValueError(f"min_words must be >= 0, got {self.min_words}")
        if not 0.0 <= self.elevated <= self.high <= 1.0:
            raise ValueError(f"band bounds need 0 <= elevated <= high <= 1, got {self.elevated}, {self.high}")


def too_short(word_count: int | None, min_words: int) -> bool:
    """True when the text is too short to judge (an unknown length is judged: the service scored it)."""
    return word_count is not None and word_count < min_words


def ai_band(score: float | None, word_count: int | None, bounds: BandBounds) -> str | None:
    """The band of one document, or ``None`` when it has no AI score yet."""
    if too_short(word_count, bounds.min_words):
        return "too_short"
    if score is None:
        return None
    if score >= bounds.high:
        return "high"
    return "elevated" if score >= bounds.elevated else "low"


def ai_flagged(score: float | None, word_count: int | None, threshold: float, min_words: int) -> bool:
    """Whether the AI score raises a flag: never for a short document, else at or above ``threshold``."""
    return score is not None and not too_short(word_count, min_words) and score >= threshold


def exact_interval(flagged: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion, from scipy."""
    if total <= 0:
        raise ValueError("an interval needs at least one reference document")
    from scipy.stats import binomtest  # here: scipy.stats is ~70 MB of RSS, needed only with a reference campaign

    ci = binomtest(flagged, total).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def threshold_for_rate(reference_scores: Sequence[float], max_rate: float) -> float:
    """The lowest threshold whose false-flag rate on the reference is at most ``max_rate``.

    Candidates are the reference scores themselves (a cut just above a score changes the count);
    if even the top score is flagged too often, the cut sits just above it, so nothing is flagged."""
    if not reference_scores:
        raise ValueError("choosing a threshold by rate needs a reference campaign with AI scores")
    if not 0.0 <= max_rate <= 1.0:
        raise ValueError(f"max_false_flag_rate must be within 0..1, got {max_rate}")
    scores = sorted(reference_scores)
    n = len(scores)
    allowed = math.floor(max_rate * n + 1e-9)
    for candidate in sorted(set(scores)):  # n log n: a reference of 100,000 essays is instant
        if n - bisect.bisect_left(scores, candidate) <= allowed:  # the scores >= candidate
            return candidate
    return math.nextafter(scores[-1], math.inf)


@dataclass(frozen=True)
class Calibration:
    """The figures of ``calibration.json``; the page states the same numbers in words."""

    reference_campaign: str | None
    reference_documents: int
    reference_flagged: int
    threshold: float
    false_flag_rate: float | None
    false_flag_rate_low: float | None
    false_flag_rate_high: float | None
    judged_documents: int
    expected_false_flags_low: float | None
    expected_false_flags_high: float | None

    def as_json(self) -> dict[str, Any]:
        """The dict written to ``calibration.json``."""
        return asdict(self)


def calibrate(
    reference_campaign: str | None,
    reference_scores: Sequence[float],
    threshold: float,
    judged_documents: int,
) -> Calibration:
    """The false-flag figures for a run; unknown (``None``) without reference scores."""
    if reference_campaign is None or not reference_scores:
        return Calibration(reference_campaign, len(reference_scores), 0, threshold, None, None, None,
                           judged_documents, None, None)  # fmt: skip
    total = len(reference_scores)
    flagged = sum(1 for s in reference_scores if s >= threshold)
    low, high = exact_interval(flagged, total)
    return Calibration(
        reference_campaign=reference_campaign,
        reference_documents=total,
        reference_flagged=flagged,
        threshold=threshold,
        false_flag_rate=flagged / total,
        false_flag_rate_low=low,
        false_flag_rate_high=high,
        judged_documents=judged_documents,
        expected_false_flags_low=judged_documents * low,
        expected_false_flags_high=judged_documents * high,
    )


def write_calibration(run_dir: Path, calibration: Calibration) -> Path:
    """Write ``calibration.json`` into the run folder (via a temporary file, so a reader never
    sees half of it): a data team reads the same numbers as the page."""
    target = run_dir / "calibration.json"
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(calibration.as_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(target)
    return target


#: The ``OutputOptions`` fields the report page is built with (plain JSON: a Prefect task parameter):
#: those :class:`AiRules` is built from, and ``group_by`` (one page per group).
RULE_OPTIONS = ("min_ai_words", "ai_band_elevated", "ai_band_high", "reference_campaign", "max_false_flag_rate",
                "group_by")  # fmt: skip
#: The key of a run's recorded parameters (``runs.params``) that holds its :data:`RULE_OPTIONS`.
JUDGING_PARAM = "judging"


def rules_from_params(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The :data:`RULE_OPTIONS` a run was judged with, from its recorded parameters, so that
    ``doccheck collect`` rewrites the page under the run's rules rather than the defaults.

    The flow records them under :data:`JUDGING_PARAM`; the command and the notebook record
    their whole options (``output`` holds them). None: a run recorded before either did."""
    params = params or {}
    found = params.get(JUDGING_PARAM)
    if not isinstance(found, Mapping):
        output = params.get("output")
        found = output if isinstance(output, Mapping) else None
    if found is None:
        return None
    return {k: found[k] for k in RULE_OPTIONS if k in found}


@dataclass(frozen=True)
class AiRules:
    """The AI rules of one report: the bands (and gate), the flag threshold, the reference.

    ``threshold`` is where an AI score raises a flag: the ``elevated`` bound, unless
    ``max_false_flag_rate`` chose one from the reference's scores (:func:`threshold_for_rate`)."""

    bounds: BandBounds = BandBounds()
    threshold: float = 0.5
    reference_campaign: str | None = None
    max_false_flag_rate: float | None = None

    @classmethod
    def from_options(cls, values: Mapping[str, Any] | None) -> AiRules:
        """Rules from the :data:`RULE_OPTIONS` values (missing ones: the defaults)."""
        v = dict(values or {})
        bounds = BandBounds(
            min_words=int(v.get("min_ai_words", 300)),
            elevated=float(v.get("ai_band_elevated", 0.5)),
            high=float(v.get("ai_band_high", 0.8)),
        )
        rate = v.get("max_false_flag_rate")
        return cls(bounds, bounds.elevated, v.get("reference_campaign"), None if rate is None else float(rate))

    def with_reference(self, reference_scores: Sequence[float]) -> AiRules:
        """These rules with the threshold chosen by rate from the reference scores (when asked; an
        empty reference keeps the bound: the run is over, and the page says the rate is unknown)."""
        if self.max_false_flag_rate is None or not reference_scores:
            return self
        chosen = threshold_for_rate(reference_scores, self.max_false_flag_rate)
        return AiRules(self.bounds, chosen, self.reference_campaign, self.max_false_flag_rate)

    def band(self, score: float | None, word_count: int | None) -> str | None:
        """:func:`ai_band` under these bounds."""
        return ai_band(score, word_count, self.bounds)

    def too_short(self, word_count: int | None) -> bool:
        """:func:`too_short` under these bounds."""
        return too_short(word_count, self.bounds.min_words)
