"""CostModel.shared_prefix_time remembers its answer per groups: a repeat gives the same float as
a fresh computation, different groups never share an entry, and the memo's bound holds."""

from parrotsim.sim.model import costmodel
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.profile import load_profile


def _fresh(groups):
    return CostModel(load_profile("h200_llama-7b"), "none", kernel="shared_prefix")._shared_prefix_time(groups)


def test_repeats_and_neighbours_are_exact():
    cm = CostModel(load_profile("h200_llama-7b"), "none", kernel="shared_prefix")
    cases = [[(4096, 32)], [(4096, 16)], [(2048, 32)], [(4096, 32), (1000, 3)],
             [(1000, 3), (4096, 32)], [(4096, 32)]]
    for groups in cases * 2:  # every case again, now from the memo
        assert cm.shared_prefix_time(groups) == _fresh(groups)
    assert len(cm._shared_memo) == 5


def test_bound(monkeypatch):
    monkeypatch.setattr(costmodel, "SHARED_MEMO_KEPT", 3)
    cm = CostModel(load_profile("h200_llama-7b"), "none", kernel="shared_prefix")
    for n in range(1, 8):
        assert cm.shared_prefix_time([(4096, n)]) == _fresh([(4096, n)])
        assert len(cm._shared_memo) <= 3
