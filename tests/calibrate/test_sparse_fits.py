"""Fits on sparse grids (calibrate --quick): no knot without a point to pin it, no per-token
correction that takes the GEMMs away."""

import numpy as np
import pytest

from parrotsim.calibrate import curvefit as cf


def test_a_knot_no_point_is_near_is_dropped():
    knots = np.array([0.0, 5e5, 2.1e6, 8.4e6, 3.4e7])
    x = np.array([5e5, 8.39e6, 3.36e7])  # nothing near 2.1e6 (8.39e6 hugs its neighbour)
    assert cf.supported_knots(knots, x).tolist() == [0.0, 5e5, 8.4e6, 3.4e7]
    dense = np.geomspace(1e5, 3e7, 40)
    assert cf.supported_knots(knots, dense).tolist() == knots.tolist()


def test_sparse_points_fit_a_line_without_a_spurious_bump():
    x = np.array([5e5, 8.39e6, 3.36e7, 1.3e8])
    y = 2e-9 * x  # a straight line through the origin
    knots = cf.log_knots(x.min(), x.max(), 0.5)
    vals, _ = cf.fit_piecewise(x, y, cf.supported_knots(knots, x))
    kept = cf.supported_knots(knots, x)
    assert np.allclose(vals[1:], 2e-9 * kept[1:], rtol=1e-6)


def test_per_token_correction_keeps_half_of_the_gemms():
    from parrotsim.calibrate.correct import correct
    from tests.sim.helpers import a100_13b

    prof = a100_13b()
    lin = prof.curves.linear
    # training passes that measure far less than the composed curves: the free fit would
    # take more per token than the GEMMs cost
    train = [{"prefills": f"{n}@0", "decodes": 0, "decode_ctx": 0, "prefix": 0,
              "measured_s": 0.2 * float(np.interp(n, lin.x, lin.seconds)), "kind": "prefill"}
             for n in (64, 512, 2048, 8192)]
    fitted, coef = correct(prof, train)
    floor = -0.5 * min(s / x for x, s in zip(lin.x, lin.seconds, strict=True) if x >= 1)
    assert coef["per_token_s"] == pytest.approx(floor)
    assert min(fitted.curves.linear.seconds) > 0
