"""The shipped paper-hardware profiles are projected from measured H200 curves, are marked as
such, and meet the facts they were fitted to."""

from __future__ import annotations

import pytest

from parrotsim.calibrate import facts
from parrotsim.calibrate.project import decode_step, scale_curves
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


def test_projection_leaves_source_gpu_terms_out():
    """The H200 7B profile's wave model counts the H200's 132 SMs and its shared-page grid is
    the H200's L2: neither is carried to a projected GPU (they were, for the waves, until the
    projection named them)."""
    src = load_profile("h200_llama-7b")
    assert src.curves.decode_paged_waves is not None and src.curves.paged_shared_prefix is not None
    projected = scale_curves(src, "a6000")
    assert projected.curves.decode_paged_waves is None
    assert projected.curves.paged_shared_prefix is None
    assert projected.gpu.name == "NVIDIA RTX A6000"
