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


def test_linear_keeps_a_cublas_spike():
    """A token count where cuBLAS picks a slow tile costs more than larger counts (LLaMA-3-8B,
    H100: 448 tokens 15.28 ms, 512 12.22 ms, 432 11.23, 464 12.31): the fitted curve keeps it at
    448 and leaves 432 and 464 alone, where pooling it into a non-decreasing curve would raise
    512 and lower 448. The full grid measures every 16 tokens, so the spike is one step wide."""
    from parrotsim.calibrate.fit import fit_linear
    from parrotsim.calibrate.grids import linear_grid

    ms = {384: 10.06, 400: 10.9, 416: 11.0, 432: 11.23, 448: 15.28, 464: 12.31, 480: 12.37,
          496: 12.23, 512: 12.22}
    rows = [{"section": "linear", "status": "ok", "tokens": t, "us_median": 1e3 * v}
            for t, v in ms.items()]
    c = fit_linear(rows)
    at = lambda t: 1e3 * cf.curve_at(t, c.x, c.seconds)  # noqa: E731 - ms
    assert at(448) == pytest.approx(15.28) and at(512) == pytest.approx(12.22)
    assert at(432) == pytest.approx(11.23) and at(464) == pytest.approx(12.31)
    assert at(440) == pytest.approx((11.23 + 15.28) / 2)  # only the step either side
    steps = np.diff([p["tokens"] for p in linear_grid(False) if 16 <= p["tokens"] <= 1024])
    assert set(steps) == {16}
