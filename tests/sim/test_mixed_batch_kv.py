"""CostModel.iteration_time reads a mixed batch's decodes by their KV tokens (cached prefix
plus own context, a decode without a context yet reading its prefix only): batches whose
decodes read the same tokens, split differently between the two, take the same time."""

from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.profile import load_profile
from parrotsim.sim.model.sequence import Batch
from tests.sim.helpers import seq


def _decode(kv: KVCache, cached: int, own: int | None):
    s = seq(cached + 10, 50, cached_len=cached)
    if own is not None:
        s.ctx = kv.create()
        kv.grow(s.ctx, own)
    return s


def _time(cm: CostModel, splits: list[tuple[int, int | None]]) -> float:
    kv = KVCache(10_000, 16)
    fill = seq(300, 10)
    fill.ctx = kv.create()
    kv.grow(fill.ctx, 300)
    decodes = [_decode(kv, c, own) for c, own in splits]
    return cm.iteration_time(Batch(prefills=[(fill, 300)], decodes=decodes))


def test_decodes_read_cached_and_own_tokens():
    for cm in (CostModel(load_profile("a6000_llama-7b"), "parrot"),
               CostModel(load_profile("h200_llama-7b"), "vllm")):
        own = _time(cm, [(0, 900), (0, 300), (0, 1200)])
        assert _time(cm, [(600, 300), (100, 200), (1200, None)]) == own
        assert _time(cm, [(0, 900), (0, 300), (0, 1300)]) > own  # more tokens read
