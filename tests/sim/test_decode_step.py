"""CostModel.decode_step, the one step a repeated decode iteration needs, is the first step of
the stretch built from the same arguments, float for float, and counts extrapolations alike;
the engine's repeated iterations end where stepped ones would."""

import pytest

from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.profile import load_profile
from parrotsim.sim.model.profile_parts import PagedWaves
from tests.sim.test_paged_waves import WAVES, _profile

# (sequences, KV tokens, growth, shared groups, longest): inside and past the curves' ranges,
# with and without forked groups, on several segments of the paged curve
CASES = [(1, 100, 1, [], None), (8, 9000, 8, [], 3000), (16, 3200 + 16 * 5, 16, [(4000, 16)], 3000),
         (64, 64 * 700, 64, [(1500, 40), (900, 3)], 2000), (3, 10**7, 3, [], 10**6),
         (600, 600 * 90_000, 600, [(70_000, 300)], 100_000), (2, 0, 2, [], 0)]


def _models():
    yield CostModel(load_profile("a6000_llama-7b"), "parrot")  # no waves (the GPTs runs)
    yield CostModel(load_profile("h200_llama-7b"), "parrot", kernel="shared_prefix")  # waves
    yield CostModel(_profile(WAVES))  # a hand-built grid with waves: the excess is large
    yield CostModel(_profile(PagedWaves(sms=1, programs_per_sm=1)), kernel="paged")


@pytest.mark.parametrize("case", CASES)
def test_decode_step_is_the_stretch_first_step(case):
    for stepped, whole in zip(_models(), _models(), strict=True):
        t = stepped.decode_step(*case)
        stretch = whole.decode_stretch(*case)
        assert t == stretch.first  # exactly: same floats, formed the same way
        assert t == stretch.duration(1)
        assert stepped.extrapolated == whole.extrapolated
        assert stepped.beyond == whole.beyond


def test_excess_is_in_the_step():
    cm = CostModel(_profile(WAVES))
    skewed = cm.decode_step(16, 16 * 400, 16, [], 3000)
    even = cm.decode_step(16, 16 * 400, 16, [], 400)
    assert skewed > even  # the longest read sets the critical path
