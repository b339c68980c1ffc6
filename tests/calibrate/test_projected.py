"""The shipped paper-hardware profiles are projected from measured H200 curves, are marked as
such, and meet the facts they were fitted to."""

from __future__ import annotations

import pytest

from parrotsim.calibrate import facts
from parrotsim.calibrate.project import decode_step
from parrotsim.sim.model.profile import load_profile

NAMES = ["a100-80gb_llama-13b", "a100-80gb_llama-7b", "a6000_llama-7b"]


@pytest.mark.parametrize("name", NAMES)
def test_projected_marked(name):
    p = load_profile(name)
    assert p.source == "projected+fitted"
    assert p.residuals and p.environment["projected_from"].startswith("h200_")


def test_a100_13b_decode_step():
    p = load_profile("a100-80gb_llama-13b")
    assert decode_step(p) == pytest.approx(facts.DECODE_STEP_13B_A100_S, rel=1e-3)
    assert p.residuals["fig10_median_abs_rel_error"] <= 0.10
