"""The engine's shared-prefix groups (sim/model/engine.py ``_shared_groups``) on hand-built
batches: groups in the order of each prefix's first decode, and the answer remembered for the
same decodes only (same sequences in the same order), whatever happened to the batch's list."""

import simpy

from parrotsim.calibrate.roofline import GPUS, MODELS, roofline_profile
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Batch, Sequence


def _engine(kv: KVCache) -> Engine:
    prof = roofline_profile(GPUS["a100-80gb"], MODELS["llama-7b"])
    cm = CostModel(prof, "none", paged_kernel="vllm_0_1_4", kernel="shared_prefix")
    return Engine(simpy.Environment(), 0, None, cm, kv, lambda s, t: None,
                  kernel="shared_prefix")


def _forked(kv: KVCache, uid: int, prefix, cached: int) -> Sequence:
    s = Sequence(uid, "app", "call", cached + 10, 10, cached_len=cached, prefix_ctx=prefix)
    s.ctx = kv.create(prefix)
    kv.grow(s.ctx, 10)
    return s


def _setup():
    kv = KVCache(10**5)
    a, b = kv.create(), kv.create()
    kv.grow(a, 100)
    kv.grow(b, 200)
    a1, a2, a3 = (_forked(kv, i, a, 100) for i in range(3))
    b1, b2 = (_forked(kv, 10 + i, b, 200) for i in range(2))
    lone = Sequence(20, "app", "call", 50, 10)
    return _engine(kv), (a1, a2, a3), (b1, b2), lone


def test_groups_follow_each_prefix_first_decode_and_a_new_order_is_not_the_memo():
    eng, (a1, a2, a3), (b1, b2), lone = _setup()
    assert eng._shared_groups(Batch(decodes=[a1, lone, b1, a2, b2])) == ([(100, 2), (200, 2)], 600)
    # the same sequences, b first: were the last answer reused, the order would be wrong
    assert eng._shared_groups(Batch(decodes=[b1, a1, lone, a2, b2])) == ([(200, 2), (100, 2)], 600)
    # a1 leaves (its group's first decode): b's group comes first now
    assert eng._shared_groups(Batch(decodes=[lone, b1, a2, a3, b2])) == ([(200, 2), (100, 2)], 600)
    assert eng._shared_groups(Batch(decodes=[a2, b1, b2])) == ([(200, 2)], 400)


def test_the_same_decodes_give_the_remembered_answer_and_a_changed_list_does_not():
    eng, (a1, a2, a3), (b1, b2), lone = _setup()
    decodes = [a1, a2, b1]
    first = eng._shared_groups(Batch(decodes=decodes))
    assert first == ([(100, 2)], 200)
    assert eng._shared_groups(Batch(decodes=[a1, a2, b1])) is first  # equal list: remembered
    decodes.append(b2)  # the batch's own list changed in place (a ledger's members do)
    assert eng._shared_groups(Batch(decodes=decodes)) == ([(100, 2), (200, 2)], 600)
    del decodes[1]
    assert eng._shared_groups(Batch(decodes=decodes)) == ([(200, 2)], 400)
    assert eng._shared_groups(Batch(decodes=[a1, lone, a3])) == ([(100, 2)], 200)
    assert eng._shared_groups(Batch(decodes=[a1, lone, a2])) == ([(100, 2)], 200)
    assert eng._shared_groups(Batch(decodes=[lone])) == ([], 0)


def test_one_prefix_per_batch_serves_only_a_batch_whose_forks_share_one_prefix():
    """The artifact's kernels took the batch's first job's prefix for every decode: with
    ``one_prefix_per_batch`` a batch mixing two forked prompts (or a fork beside a plain
    sequence) gets no groups - the paged kernel - and one whose decodes all fork one prompt
    keeps its group."""
    kv = KVCache(10**5)
    _, (a1, a2, a3), (b1, b2), lone = _setup()
    prof = roofline_profile(GPUS["a100-80gb"], MODELS["llama-7b"])
    cm = CostModel(prof, "none", kernel="shared_prefix")
    one = Engine(simpy.Environment(), 0, None, cm, kv, lambda s, t: None,
                 kernel="shared_prefix", one_prefix_per_batch=True)
    assert one._shared_groups(Batch(decodes=[a1, a2, a3])) == ([(100, 3)], 300)
    assert one._shared_groups(Batch(decodes=[a1, a2, b1, b2])) == ([], 0)
    assert one._shared_groups(Batch(decodes=[a1, a2, lone])) == ([], 0)
    many = _setup()[0]  # today's kernel: any number of prefixes per batch
    assert many._shared_groups(Batch(decodes=[a1, a2, b1, b2])) == ([(100, 2), (200, 2)], 600)
