"""The Parrot engine's shortage step (``parrot_shortage.short_step``) and the skipped walk of
the queue behind held-back Generates, on hand-built states."""

from operator import attrgetter

from parrotsim.policies.engine.parrot_shortage import grow_decodes, held_tokens, short_step
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.kv_cache import KVCache
from tests.policies.test_parrot_engine import policy, seq

KEY = attrgetter("arrived", "uid")


def generate(kv: KVCache, tokens: int, arrived: float):
    """A Generate job (prompt filled) whose context holds ``tokens`` tokens."""
    s = seq(tokens, 50, arrived=arrived)
    s.filled = s.fill_target
    s.ctx = kv.create()
    kv.grow(s.ctx, tokens)
    return s


def held_back_state(blocks: int):
    """Running a (block half full), b (block full); held back h1, h2 (blocks full) around b
    in arrival order; one Fill waiting behind them. ``blocks`` in the cache."""
    kv = KVCache(blocks, 16)
    st = EngineState(kv)
    a, b = generate(kv, 8, 0.0), generate(kv, 16, 2.0)
    h1, h2 = generate(kv, 32, 1.0), generate(kv, 16, 3.0)
    fill = seq(40, 5, arrived=4.0)
    st.running = [a, b]
    st.waiting.extend([h2, h1, fill])  # held back in running order, pushed to the head
    return st, (a, b, h1, h2, fill)


def test_no_free_block_holds_back_every_job_that_needs_one():
    st, (a, b, h1, h2, fill) = held_back_state(6)  # 1 + 1 + 2 + 1 blocks used: 1 free
    st.kv.used_blocks = st.kv.num_blocks  # none free
    decodes, held, tokens = short_step(st, [h1, h2], KEY, None, held_tokens([h1, h2]))
    assert decodes == [a] and st.running == [a] and a.ctx.tokens == 9
    assert held == [h1, b, h2] and list(st.waiting) == [h2, b, h1, fill]
    assert b.ctx.tokens == 16 and tokens == 32 + 16 + 16


def test_a_freed_block_goes_to_the_first_job_in_running_order_that_needs_one():
    st, (a, b, h1, h2, fill) = held_back_state(6)
    used = st.kv.used_blocks
    decodes, held, _ = short_step(st, [h1, h2], KEY, None, held_tokens([h1, h2]))
    assert decodes == [a, h1] and st.running == [a, h1]  # h1 arrived before b
    assert h1.ctx.tokens == 33 and st.kv.used_blocks == used + 1 == st.kv.peak_blocks
    assert held == [b, h2] and list(st.waiting) == [h2, b, fill]


def test_undecided_cases_change_nothing():
    st, (a, b, h1, h2, fill) = held_back_state(6)
    st.kv.used_blocks = st.kv.num_blocks
    # max_total_tokens would hold jobs back: 8 + 16 + 32 + 16 > 70
    assert short_step(st, [h1, h2], KEY, 70, held_tokens([h1, h2])) is None
    st.running = [b]  # nothing could run: the full walk frees memory
    assert short_step(st, [h1, h2], KEY, None, held_tokens([h1, h2])) is None
    assert a.ctx.tokens == 8 and b.ctx.tokens == 16
    assert list(st.waiting) == [h2, h1, fill] and st.running == [b]


def test_the_queue_behind_held_back_jobs_is_walked_again_only_when_it_may_admit():
    """A Fill that does not fit waits behind the held-back Generates: while the queue, the jobs
    and the free blocks stay the same it is not walked again, and the memory stall its walk
    counted is counted again each time; a job appended to the queue makes it walk."""
    kv = KVCache(5, 16)
    st = EngineState(kv)
    a, c = generate(kv, 8, 0.0), generate(kv, 3, 2.5)  # partial blocks: they decode
    h1, h2 = generate(kv, 32, 1.0), generate(kv, 16, 3.0)  # full blocks, none free
    fill = seq(40, 5, arrived=4.0)
    st.running = [a, c]
    st.waiting.extend([h2, h1, fill])
    p = policy()
    p._short_head, p._short_tokens = [h1, h2], held_tokens([h1, h2])
    walks = []
    walk = p._walk

    def counting_walk(*args, **kw):
        walks.append(1)
        return walk(*args, **kw)

    p._walk = counting_walk
    for i in range(3):
        b = p.schedule(st)
        assert b.decodes == [a, c] and list(st.waiting) == [h2, h1, fill]
        assert len(walks) == 1 and p.memory_stalls == 2 * (i + 1)  # the Fill's, the holding's
    late = seq(40, 5, arrived=5.0)
    st.waiting.append(late)
    p.schedule(st)
    assert len(walks) == 2 and p.memory_stalls == 8
    p.schedule(st)
    assert len(walks) == 2 and p.memory_stalls == 10


def test_grow_decodes_hands_out_blocks_in_order_past_a_context_with_spare_blocks():
    """One pass hands out blocks in order, skipping Fill jobs: a context holding spare blocks
    gives them back and a later job may take one; when none is left the job is short."""
    kv = KVCache(9, 4)
    a, b, c = generate(kv, 4, 0.0), generate(kv, 1, 1.0), generate(kv, 8, 2.0)
    fill, d, e = generate(kv, 2, 3.0), generate(kv, 4, 4.0), generate(kv, 4, 5.0)
    b.ctx.blocks = 3  # two spare
    kv.used_blocks, kv.peak_blocks = 1 + 3 + 2 + 1 + 1 + 1, 0  # none free
    decodes, short = grow_decodes(kv, [a, b, c, fill, d, e], {fill.uid: 2})
    # a: short (none free); b gives two back; c and d take them; e: short
    assert decodes == [b, c, d] and short == [a, e]
    assert kv.used_blocks == 9 and kv.peak_blocks == 9
    assert (a.ctx.tokens, b.ctx.blocks, c.ctx.blocks, fill.ctx.tokens) == (4, 1, 3, 2)


def test_grow_decodes_peak_inside_the_pass():
    kv = KVCache(10, 4)
    a, b = generate(kv, 4, 0.0), generate(kv, 1, 1.0)  # a: full block; b: 1 token
    b.ctx.blocks = 4
    kv.used_blocks, kv.peak_blocks = 5, 0  # 1 + 4
    decodes, short = grow_decodes(kv, [a, b], {})  # a takes one (6), b gives three back (3)
    assert decodes == [a, b] and short == []
    assert kv.used_blocks == 3 and kv.peak_blocks == 6
