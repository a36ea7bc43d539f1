"""The length gate, the bands and the expected false flags (doccheck.outputs._calibration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import beta, binomtest

from doccheck.outputs._calibration import (
    BandBounds,
    ai_band,
    ai_flagged,
    calibrate,
    exact_interval,
    threshold_for_rate,
    write_calibration,
)


def test_a_short_document_is_never_ai_flagged() -> None:
    assert not ai_flagged(0.99, 299, threshold=0.5, min_words=300)
    assert ai_flagged(0.99, 300, threshold=0.5, min_words=300)
    assert ai_band(0.99, 12, BandBounds()) == "too_short"


def test_bands_follow_the_bounds() -> None:
    bounds = BandBounds(min_words=300, elevated=0.5, high=0.8)
    assert [ai_band(s, 500, bounds) for s in (0.1, 0.5, 0.79, 0.8)] == ["low", "elevated", "elevated", "high"]
    assert ai_band(None, 500, bounds) is None
    with pytest.raises(ValueError):
        BandBounds(elevated=0.9, high=0.5)


def test_interval_equals_scipy_and_the_beta_formula() -> None:
    low, high = exact_interval(3, 412)
    ci = binomtest(3, 412).proportion_ci(method="exact")
    assert (low, high) == (ci.low, ci.high)
    # Clopper-Pearson by hand: Beta quantiles
    assert low == pytest.approx(beta.ppf(0.025, 3, 410))
    assert high == pytest.approx(beta.ppf(0.975, 4, 409))
    assert exact_interval(0, 10)[0] == 0.0


def test_published_value_zero_of_ten() -> None:
    # the "rule of three" case: 0 of 10, exact upper bound 1 - 0.025**(1/10) = 0.3085
    assert exact_interval(0, 10)[1] == pytest.approx(0.30850, abs=1e-5)


def test_false_flag_figures_equal_a_hand_computation() -> None:
    reference = [0.1] * 409 + [0.6, 0.7, 0.9]
    cal = calibrate("essays-2021", reference, threshold=0.5, judged_documents=38)
    assert (cal.reference_documents, cal.reference_flagged) == (412, 3)
    assert cal.false_flag_rate == pytest.approx(3 / 412)
    low, high = exact_interval(3, 412)
    assert cal.expected_false_flags_low == pytest.approx(38 * low)
    assert cal.expected_false_flags_high == pytest.approx(38 * high)
    assert set(cal.as_json()) >= {"reference_campaign", "judged_documents", "false_flag_rate_high"}


def test_without_a_reference_the_rate_is_unknown() -> None:
    cal = calibrate(None, [], threshold=0.5, judged_documents=38)
    assert cal.false_flag_rate is None and cal.expected_false_flags_high is None


def test_threshold_by_rate_picks_the_right_cut() -> None:
    reference = [i / 100 for i in range(100)]  # 0.00 .. 0.99
    assert threshold_for_rate(reference, 0.05) == pytest.approx(0.95)  # 0.95..0.99 = 5 flagged
    assert threshold_for_rate(reference, 0.0) > 0.99
    assert threshold_for_rate(reference, 1.0) == 0.0


def test_the_options_carry_the_rules_with_their_defaults() -> None:
    from doccheck.pipeline import OutputOptions

    out = OutputOptions()
    assert (out.min_ai_words, out.ai_band_elevated, out.ai_band_high) == (300, 0.5, 0.8)
    assert out.reference_campaign is None and out.max_false_flag_rate is None
    bounds = BandBounds(out.min_ai_words, out.ai_band_elevated, out.ai_band_high)
    assert ai_band(0.9, 299, bounds) == "too_short"
    with pytest.raises(ValueError):
        OutputOptions(max_false_flag_rate=1.5)


def test_calibration_json_holds_the_fields_the_page_states(tmp_path: Path) -> None:
    cal = calibrate("essays-2021", [0.1] * 9 + [0.9], threshold=0.5, judged_documents=20)
    written = json.loads(write_calibration(tmp_path, cal).read_text())
    assert written["reference_flagged"] == 1 and written["judged_documents"] == 20
    assert written["expected_false_flags_high"] == pytest.approx(20 * exact_interval(1, 10)[1])


def test_a_runs_recorded_rules_are_read_back_for_collect() -> None:
    from doccheck.outputs._calibration import JUDGING_PARAM, RULE_OPTIONS, AiRules, rules_from_params
    from doccheck.pipeline import RunOptions

    options = RunOptions.from_flat(manifest="m.csv", min_ai_words=120, ai_band_elevated=0.7,
                                   reference_campaign="old", max_false_flag_rate=0.05)  # fmt: skip
    flow = {"manifest": "m.csv", JUDGING_PARAM: options.output.model_dump(mode="json", include=set(RULE_OPTIONS))}
    command = {"source": "command", **options.model_dump(mode="json", exclude={"connection"})}
    for params in (flow, command):
        rules = AiRules.from_options(rules_from_params(params))
        assert (rules.bounds.min_words, rules.bounds.elevated, rules.reference_campaign) == (120, 0.7, "old")
        assert rules.max_false_flag_rate == 0.05
    assert rules_from_params({"manifest": "m.csv"}) is None and rules_from_params(None) is None
