"""The artifact's Bing slot pool (calibrate/bing_pool.py): its schedule on hand-built cases, and
the iteration model recovered from latencies made with known coefficients."""

import numpy as np
import pytest

from parrotsim.calibrate.bing_pool import fit, pool_schedule


def test_two_slots_in_order():
    # requests: (fill, outputs) = (10, 2), (20, 1), (30, 1); two slots
    s = pool_schedule([10, 20, 30], [2, 1, 1], slots=2, repush_last=False)
    # it1: both fill; it2: both generate, request 1 done, request 2 pushed;
    # it3: request 0 generates (done), request 2 fills; it4: request 2 generates (done)
    assert s.fill_tokens == [30, 0, 30, 0]
    assert s.generates == [0, 2, 1, 1]
    assert s.done == [(1, 0, 2), (0, 0, 3), (2, 2, 4)]


def test_the_scripts_first_refill_pushes_the_last_first_request_again():
    s = pool_schedule([10, 20, 30], [2, 1, 1], slots=2, repush_last=True)
    pushed = [p for p, _, _ in s.done]
    assert pushed[:3] == [1, 0, 1]  # request 1 (= slots - 1) runs twice
    assert len(s.done) == 3 and 2 not in pushed[:3]


@pytest.mark.parametrize("repush", [False, True])
def test_fit_recovers_known_iteration_costs(repush):
    rng = np.random.default_rng(3)
    fills = rng.integers(100, 2000, 40).tolist()
    outputs = rng.integers(20, 200, 40).tolist()
    sched = pool_schedule(fills, outputs, slots=8, repush_last=repush)
    a, b, f = 0.016, 0.0004, 1e-4
    it = a + b * np.array(sched.generates) + f * np.array(sched.fill_tokens)
    t = np.concatenate([[0.0], np.cumsum(it)])
    lat = [t[fin] - t[push] for _, push, fin in sched.done[:40]]
    coef, err = fit(sched, lat)
    assert np.allclose(coef, [a, b, f], rtol=1e-6)
    assert np.abs(err).max() < 1e-9
