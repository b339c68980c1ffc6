"""Targets and bounds of a replay comparison, on hand-made rows."""

import math

import pytest

from parrotsim.calibrate.replay import targets
from parrotsim.core.errors import UsageError


def row(**kw):
    base = {"e2e_median_err": 0.02, "e2e_mean_bias": -0.01, "e2e_p90_bias": 0.04,
            "ttft_median_err": 0.04, "tpot_median_err": 0.02,
            "iter_all_model_vs_cycle_median_err": 0.015, "real_preemptions": 100,
            "sim_preemptions": 104, "real_peak_kv_blocks": 0, "sim_peak_kv_blocks": 0}
    return {**base, **kw}


def test_a_row_within_every_issue_target():
    assert targets.broken(row(), targets.ISSUE_TARGETS) == []


def test_bias_bounds_limit_the_absolute_value_and_counts_are_relative():
    bad = targets.broken(row(e2e_mean_bias=-0.05, sim_preemptions=90), targets.ISSUE_TARGETS)
    assert [b.split()[0] for b in bad] == ["e2e_mean_bias", "preemptions_err"]
    assert targets.count_error(0, 3) == math.inf and targets.count_error(0, 0) == 0.0


def test_nan_breaks_a_bound_and_unknown_metrics_are_errors():
    assert targets.broken(row(ttft_median_err=float("nan")), {"ttft_median_err": 1.0})
    with pytest.raises(KeyError):
        targets.broken(row(), {"nonsense_err": 1.0})


def test_bounds_file_errors_name_the_field(tmp_path):
    f = tmp_path / "bounds.yaml"
    f.write_text("profile: p\nbounds: {e2e_median_err: 0.1, tpot_median_err: -1}\n")
    with pytest.raises(UsageError, match=r"bounds.yaml: bounds.tpot_median_err"):
        targets.load_bounds(f)
    f.write_text("bounds: {e2e_median_err: 0.1}\n")
    assert targets.load_bounds(f) == (None, {"e2e_median_err": 0.1})
