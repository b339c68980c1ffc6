"""Decode steps accounted in one pass per batch: ``append_token_each`` (a vLLM decode step's
slots and the batch's fewest tokens left) and ``end_decode_stretch`` (a fast-forwarded
stretch's growth, first tokens and counts) agree with the per-context operations they fuse."""

import random

import pytest

from parrotsim.sim.model.emission import end_decode_stretch
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Batch, Sequence
from tests.policies.vllm_engine_reference import append_token_each


def running(kv: KVCache, lens: list[tuple[int, int, int]]) -> list[Sequence]:
    """Sequences holding ``tokens`` tokens with ``generated`` of ``output`` tokens made."""
    out = []
    for uid, (tokens, generated, output) in enumerate(lens):
        s = Sequence(uid, "a", "c", tokens, output)
        s.allocate(kv, tokens)
        s.generated = generated
        out.append(s)
    return out


def test_append_token_each_takes_blocks_only_at_boundaries_and_reports_the_horizon():
    kv = KVCache(10, 16)
    a, b = running(kv, [(16, 3, 10), (20, 1, 5)])  # a's block is full, b's is not
    assert append_token_each(kv, [a, b], keep_free=1) == 4  # b has 4 tokens left
    assert (a.ctx.tokens, a.ctx.blocks, b.ctx.tokens, b.ctx.blocks) == (17, 2, 21, 2)
    assert kv.used_blocks == 4 and kv.peak_blocks == 4


def test_append_token_each_changes_nothing_when_short():
    kv = KVCache(3, 16)
    a, b = running(kv, [(16, 0, 9), (32, 0, 9)])  # 3 blocks used, both full
    assert append_token_each(kv, [a, b], keep_free=0) is None
    assert (a.ctx.tokens, a.ctx.blocks, b.ctx.tokens, b.ctx.blocks) == (16, 1, 32, 2)
    assert kv.used_blocks == 3 and kv.peak_blocks == 3


@pytest.mark.parametrize("seed", range(30))
def test_both_agree_with_the_per_context_operations(seed: int):
    rr = random.Random(seed)
    lens = [(rr.randint(1, 100), g := rr.randint(0, 20), g + rr.randint(1, 40))
            for _ in range(rr.randint(1, 12))]
    blocks = sum(-(-t // 16) for t, _, _ in lens) + rr.randint(0, 30)
    keep = rr.randint(0, 3)
    kv, ref = KVCache(blocks, 16), KVCache(blocks, 16)
    seqs, ref_seqs = running(kv, lens), running(ref, lens)
    fits = ref.grow_each_keeping([s.ctx for s in ref_seqs], 1, keep_free=keep)
    horizon = append_token_each(kv, seqs, keep_free=keep)
    assert (horizon is not None) == fits
    if fits:
        assert horizon == min(s.remaining for s in ref_seqs)
    assert [s.ctx.tokens for s in seqs] == [s.ctx.tokens for s in ref_seqs]
    assert [s.ctx.blocks for s in seqs] == [s.ctx.blocks for s in ref_seqs]
    assert (kv.used_blocks, kv.peak_blocks) == (ref.used_blocks, ref.peak_blocks)
    if not fits:
        return
    steps = rr.randint(1, 12)
    finished = []
    try:
        end_decode_stretch(kv, Batch(decodes=seqs), steps, 1.0, 2.0,
                           lambda s, t: finished.append((s.uid, t)))
    except MemoryError:
        with pytest.raises(MemoryError):
            ref.grow_each([s.ctx for s in ref_seqs], steps - 1)
        return
    if steps > 1:
        ref.grow_each([s.ctx for s in ref_seqs], steps - 1)
    assert [s.ctx.tokens for s in seqs] == [s.ctx.tokens for s in ref_seqs]
    assert [s.ctx.blocks for s in seqs] == [s.ctx.blocks for s in ref_seqs]
    assert (kv.used_blocks, kv.peak_blocks) == (ref.used_blocks, ref.peak_blocks)
    assert [s.generated for s in seqs] == [s.generated + steps for s in ref_seqs]
    assert all(s.first_token == 1.0 for s in seqs)
    assert finished == [(s.uid, 2.0) for s in ref_seqs if s.generated + steps >= s.output_len]
