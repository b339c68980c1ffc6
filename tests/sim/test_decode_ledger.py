"""The decode ledger on hand-built cases: blocks taken exactly at block boundaries, finishes in
(step, key) order across a preemption and a re-join, the fast-forward bound, the KV total and
the longest context against brute force over random operations."""

import random

import pytest

from parrotsim.policies.engine.kv_horizon import steps_within_blocks
from parrotsim.sim.model.decode_ledger import DecodeLedger
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Sequence


def member(kv: KVCache, uid: int, tokens: int, output: int, generated: int = 1,
           cached: int = 0) -> Sequence:
    s = Sequence(uid, "a", "c", tokens + cached, output, cached_len=cached)
    s.allocate(kv, tokens)
    s.generated = generated
    s.first_token = 0.0
    return s


def test_blocks_are_taken_only_when_a_context_crosses_a_block_boundary():
    kv = KVCache(20, 16)
    a, b, c = member(kv, 0, 15, 99), member(kv, 1, 16, 99), member(kv, 2, 17, 99)
    ledger = DecodeLedger(kv, eager=False)
    for s in (a, b, c):
        ledger.join(s, (s.uid,))
    assert kv.used_blocks == 4
    assert ledger.try_step(keep_free=1)  # only b (16 tokens, last block full) takes one
    assert kv.used_blocks == 5 and a.ctx.tokens == 15  # a is not touched: it lags
    # now a: 16 tokens (full), b: 17, c: 18; +e tokens cross at e = 1 (a), 16 (b), 15 (c)
    assert [ledger.need(e) for e in (1, 14, 15, 16, 17)] == [1, 1, 2, 3, 4]
    ledger.advance(16)
    assert kv.used_blocks == 8 and kv.peak_blocks == 8
    ledger.sync_all()
    assert [(s.ctx.tokens, s.ctx.blocks) for s in (a, b, c)] == [(32, 2), (33, 3), (34, 3)]
    assert [s.generated for s in (a, b, c)] == [1, 1, 1]  # allocated, not yet emitted
    assert ledger.kv_tokens() == 32 + 33 + 34
    with pytest.raises(MemoryError):
        ledger.advance(16 * 5)  # 3 contexts x 5 blocks > 12 free
    assert kv.used_blocks == 8  # unchanged


def test_finishes_come_out_by_step_then_key_and_a_preempted_member_is_forgotten():
    kv = KVCache(100, 16)
    ledger = DecodeLedger(kv, eager=False)
    a, b, c = member(kv, 0, 10, 4), member(kv, 1, 10, 4), member(kv, 2, 10, 3)
    for key, s in ((2, a), (1, b), (3, c)):
        ledger.join(s, (key,))
    assert ledger.horizon() == 2  # c: 2 tokens left
    assert ledger.try_step(1)
    ledger.leave(b)  # preempted: written back, its heap entry goes stale
    assert (b.ctx.tokens, b.generated) == (11, 1)
    b.preempt(kv)
    assert ledger.emit(1, 0.5) == []
    ledger.advance(1)
    assert ledger.emit(1, 0.7) == [c]
    assert (c.ctx.tokens, c.generated) == (12, 3)
    b.allocate(kv, b.fill_target - b.filled)  # refilled: prompt + 1 generated token
    b.generated = 3
    ledger.join(b, (1,))  # b and a: 1 token left each; b's old entry is stale
    assert ledger.horizon() == 1
    assert ledger.try_step(1)
    assert ledger.emit(1, 1.0) == [b, a]  # same step: key order
    assert len(ledger) == 0 and ledger.kv_tokens() == 0
    assert (a.ctx.tokens, a.generated, b.ctx.tokens, b.generated) == (13, 4, 12, 4)


@pytest.mark.parametrize("seed", range(40))
def test_fast_forward_bound_matches_the_per_sequence_one(seed: int):
    rr = random.Random(seed)
    bs = rr.choice([4, 16])
    lens = [rr.randint(1, 200) for _ in range(rr.randint(1, 30))]
    kv = KVCache(sum(-(-t // bs) for t in lens) + 2 * len(lens) + rr.randint(0, 60), bs)
    seqs = [member(kv, i, t, 10**6) for i, t in enumerate(lens)]
    ledger = DecodeLedger(kv, eager=False)
    for s in seqs:
        ledger.join(s, (s.uid,))
    ledger.advance(rr.randint(0, 7))  # members lag behind the ledger's step
    for max_steps in (1, 2, 5, 17, 100, 10**4):
        lagging = [(s.ctx.tokens, s.ctx.blocks, s.tok_base) for s in seqs]
        ledger.sync_all()
        expected = steps_within_blocks(seqs, kv.free_blocks, bs, max_steps)
        for s, (tokens, blocks, base) in zip(seqs, lagging, strict=True):
            s.ctx.tokens, s.ctx.blocks, s.tok_base = tokens, blocks, base  # lagging again
        assert ledger.steps_within(max_steps) == expected


@pytest.mark.parametrize("seed", range(20))
def test_totals_and_longest_context_match_brute_force(seed: int):
    rr = random.Random(seed)
    kv = KVCache(10**5, 16)
    ledger = DecodeLedger(kv, eager=False)
    live: list[Sequence] = []
    made: list[Sequence] = []  # contexts are never freed here: all hold their blocks
    uid = 0
    for _ in range(200):
        op = rr.random()
        if op < 0.3 or not live:
            s = member(kv, uid, rr.randint(1, 500), 10**6, cached=rr.choice([0, 0, 64]))
            ledger.join(s, (uid,))
            live.append(s)
            made.append(s)
            uid += 1
        elif op < 0.45:
            ledger.leave(live.pop(rr.randrange(len(live))))
        elif op < 0.5:
            assert ledger.try_step(0)
            ledger.emit(1, 0.0)
        else:
            ledger.advance(rr.randint(1, 40))
        assert ledger.kv_tokens() == sum(s.cached_len + s.ctx.tokens + ledger.step - s.tok_base
                                         for s in live)
        assert ledger.longest_context() == max(
            (s.cached_len + s.ctx.tokens + ledger.step - s.tok_base for s in live), default=0)
        used = kv.used_blocks
        ledger.sync_all()
        assert used == sum(s.ctx.blocks for s in made)
        assert all(s.ctx.blocks == -(-s.ctx.tokens // 16) for s in made)
