"""The fitter recovers known curves from synthetic measurements."""

from __future__ import annotations

import numpy as np
import pytest

from parrotsim.calibrate import curvefit as cf
from parrotsim.calibrate import validate as val
from parrotsim.calibrate.fit import build_profile, fit_paged
from parrotsim.sim.model.costmodel import CostModel
from tests.calibrate import synth


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    raw = synth.write_raw(tmp_path_factory.mktemp("raw"))
    return build_profile(raw, "synthetic")


def test_curves_recovered(fitted):
    prof, _, diag = fitted
    c = prof.curves
    for t in (1, 100, 3000, 8192):
        assert cf.curve_at(t, c.linear.x, c.linear.seconds) == pytest.approx(
            synth.linear_s(t), rel=1e-3)
    # paged: the (sequences x context) grid, per-sequence cost inside it (whole model)
    cm = CostModel(prof, "none")
    assert c.decode_paged_grid is not None and c.decode_per_seq_s < 0.05 * synth.LAYERS * 0.05e-6
    for b, kv in ((1, 500), (16, 16 * 3000), (64, 100_000), (256, 600_000)):
        got = cm.paged_time(b, kv) + c.decode_per_seq_s * b
        assert got == pytest.approx(synth.LAYERS * 1e-6 * synth.paged_layer_us(b, kv), rel=5e-3)
    assert cm.prefill_attention_time([(2048, 1024)]) == pytest.approx(
        synth.LAYERS * 1e-6 * synth.prefill_layer_us(2048 * (1024 + 2049 / 2)), rel=1e-3)
    assert cm.shared_prefix_time([(4096, 32)]) == pytest.approx(
        synth.LAYERS * 1e-6 * (1 + 0.002 * 4096), rel=1e-3)
    # the paged kernel over shared pages: the prefix part of a group, on its own grid
    over = CostModel(prof, "none", kernel="paged")
    assert over.paged_groups
    assert over.shared_prefix_time([(4096, 32)]) == pytest.approx(
        synth.LAYERS * 1e-6 * (0.5 + 0.004 * 4096 * (1 + 0.25 * 31)), rel=1e-3)
    assert c.iteration_overhead_s == pytest.approx(synth.OVERHEAD_S, rel=0.05)
    assert diag["fit_paged_grid_rms_rel"] < 1e-6 and diag["fit_shared_rms_rel"] < 0.01


def test_heldout_error_near_zero(fitted):
    prof, points, _ = fitted
    held = [p for p in points if p["split"] == "heldout"]
    assert {p["kind"] for p in held} == {"decode", "prefill", "mixed"}
    assert 0 < len(held) < len(points) / 2
    summary = val.summarize(val.evaluate(prof, points, "heldout"))
    assert summary["all"]["worst"] < 0.01


def test_oom_point_recorded(fitted):
    prof, _, _ = fitted
    assert "linear" in prof.environment["skipped_points"]
    assert "tokens=99999" in prof.environment["skipped_points"]


def test_one_dimensional_paged_fit():
    """The 1-D curve plus a cost per sequence (profiles without a grid) on a separable kernel."""
    rows = [{"section": "paged", "status": "ok", "batch": b, "ctx": ctx,
             "us_median": 2.0 + 0.004 * b * ctx + 0.05 * b}
            for b in (1, 4, 16, 64, 256) for ctx in (128, 1024, 4096) if b * ctx <= 1 << 20]
    curve, per_seq, rms = fit_paged(rows, synth.LAYERS)
    assert per_seq == pytest.approx(synth.LAYERS * 0.05e-6, rel=0.02) and rms < 1e-3
    assert cf.curve_at(64 * 1024, curve.x, curve.seconds) + 64 * per_seq == pytest.approx(
        synth.LAYERS * 1e-6 * (2.0 + 0.004 * 64 * 1024 + 0.05 * 64), rel=1e-3)


def test_piecewise_and_isotonic():
    x = np.array([1.0, 2, 3, 5, 8, 13])
    knots = np.array([0.0, 4, 16])
    vals, extra = cf.fit_piecewise(x, 3 * x + 1 + 0.5 * x ** 0, knots)
    assert vals == pytest.approx([1.5, 13.5, 49.5])
    assert extra.size == 0
    assert cf.isotonic(np.array([1.0, 3, 2, 4])).tolist() == [1, 2.5, 2.5, 4]
