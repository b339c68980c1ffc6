"""The page allocator against the KV cache's block counts."""

import random

import pytest

from parrotsim.api import run_config
from parrotsim.calibrate.replay.pages import PageAllocator
from parrotsim.sim.model.kv_cache import KVCache

from .helpers import config, cost_model_replay
from .test_executor import DAGS


def _live(ctxs):
    return [c for c in ctxs if c.refs > 0]


@pytest.mark.parametrize("seed", range(8))
def test_random_grow_fork_release(seed):
    rng = random.Random(seed)
    kv = KVCache(64, 16)
    pages = PageAllocator(kv.num_blocks)
    owners = []  # contexts the "sequences" hold a reference on
    made = []
    forks = orphans = 0
    for _ in range(400):
        op = rng.random()
        if op < 0.3 or not owners:
            parent = None
            parents = [c for c in owners if c.parent is None and c.tokens % 16 == 0
                       and c.tokens]
            if parents and rng.random() < 0.4:
                parent = rng.choice(parents)
                forks += 1
            ctx = kv.create(parent)
            owners.append(ctx)
            made.append(ctx)
        elif op < 0.75:
            ctx = rng.choice(owners)
            n = rng.randint(1, 40)
            if kv.can_grow(ctx, n) and not any(c.parent is ctx for c in _live(made)):
                kv.grow(ctx, n)
        else:  # free or preempt: the holder drops its reference
            ctx = owners.pop(rng.randrange(len(owners)))
            before = set(pages.free)
            own = list(pages._owned[id(ctx)][1]) if id(ctx) in pages._owned else []
            kv.release(ctx)
            orphans += ctx.refs > 0  # a parent whose children keep it alive
            pages.sync(owners)
            if ctx.refs == 0:  # its own pages came back
                assert set(own) <= set(pages.free)
            assert before <= set(pages.free)
        pages.sync(owners)
        pages.check(_live(made))
        assert pages.used == kv.used_blocks
        for ctx in owners:  # a fork's table starts with its parent's pages, shared
            table = pages.table(ctx)
            assert len(table) == ctx.blocks + (ctx.parent.blocks if ctx.parent else 0)
            if ctx.parent is not None:
                assert table[:ctx.parent.blocks] == pages.pages(ctx.parent)
    assert forks > 0 and orphans > 0
    for ctx in owners:
        kv.release(ctx)
    pages.sync([])
    assert pages.used == 0 and kv.used_blocks == 0


def test_parent_pages_outlive_a_child_and_are_freed_with_the_last_reference():
    kv = KVCache(16, 16)
    pages = PageAllocator(16)
    parent = kv.create()
    kv.grow(parent, 32)
    a, b = kv.create(parent), kv.create(parent)
    kv.grow(a, 5)
    kv.grow(b, 20)
    pages.sync([a, b])
    shared = pages.pages(parent)
    assert pages.table(a)[:2] == pages.table(b)[:2] == shared
    kv.release(parent)  # the creator lets go: the children keep it alive
    kv.release(a)
    pages.sync([b])
    assert pages.table(b)[:2] == shared and pages.used == 4
    kv.release(b)
    pages.sync([])
    assert pages.used == 0 and sorted(pages.free) == list(range(16))


def test_replay_pages_follow_the_policy_through_preemptions():
    live_max = [0]

    def check(replay, batch, prefills, decodes):
        engine = replay.engines[0]
        running = [s for s in engine.state.running if s.ctx is not None]
        engine.pages.check([s.ctx for s in running])
        assert engine.pages.used == engine.kv.used_blocks
        tables = [set(engine.pages.table(s.ctx)) for s in running]
        assert sum(map(len, tables)) == len(set().union(*tables))  # no page on two contexts
        for s in engine.state.waiting:
            assert s.ctx is None  # preempted or new: no pages
        live_max[0] = max(live_max[0], engine.pages.used)
    replay = cost_model_replay(config(rate=14.0, n=60, capacity=2048, seed=1), check)
    result = replay.run()
    engine = replay.engines[0]
    assert result.calls["preemptions"].sum() > 0
    assert live_max[0] == engine.kv.peak_blocks
    engine.pages.release_dead()
    assert engine.pages.used == 0


@pytest.mark.parametrize("name", ["chain_parrot", "bing_shared_prefix"])
def test_replay_pages_hold_forked_prefixes_once(name):
    forked = [0]

    def check(replay, batch, prefills, decodes):
        engine = replay.engines[0]
        engine.pages.check([s.ctx for s in engine.state.running if s.ctx is not None])
        assert engine.pages.used == engine.kv.used_blocks  # cached prefixes included
        for s, c in zip(batch.decodes, decodes, strict=True):
            if s.ctx.parent is not None:  # a fork: the parent's pages lead its table
                forked[0] += 1
                assert c.table[:s.ctx.parent.blocks] == engine.pages.pages(s.ctx.parent)
                assert c.ctx_len == s.ctx.parent.blocks * 16 + s.ctx.tokens - 1
    cost_model_replay(run_config(**DAGS[name], seed=1), check).run()
    assert forked[0] > 0
