"""Parrot's engine scheduler on hand-built states: fifo / fifo_v2 / tgi, forks, memory, steps."""

import random

import pytest

from parrotsim.policies.engine.parrot import ParrotEngineConfig, ParrotEnginePolicy
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.kv_cache import Context, KVCache
from parrotsim.sim.model.sequence import Batch, Sequence

_uid = iter(range(10**9))


class ReadyCtx(Context):
    """A prefix context with the ``ready`` flag the simulator sets when its fill completes."""

    __slots__ = () if "ready" in Context.__slots__ else ("ready",)


def seq(prompt: int, output: int, arrived: float = 0.0, app: int = 0, **kw) -> Sequence:
    uid = next(_uid)
    s = Sequence(uid, f"app{app}", "call", prompt, output, order=(app, uid), **kw)
    s.arrived = arrived
    return s


def state(blocks: int, *waiting: Sequence) -> EngineState:
    st = EngineState(KVCache(blocks, 16))
    st.waiting.extend(waiting)
    return st


def policy(**kw) -> ParrotEnginePolicy:
    return ParrotEngineConfig(**kw).make()


def step(p: ParrotEnginePolicy, st: EngineState, steps: int = 1) -> Batch:
    """Schedule one iteration and apply its effects as the engine does (no token on fills)."""
    b = p.schedule(st)
    apply(p, b, st, steps)
    return b


def apply(p: ParrotEnginePolicy, b: Batch, st: EngineState, steps: int) -> None:
    """The effects of ``steps`` identical iterations of ``b`` (the first already allocated),
    ending with the policy's end-of-iteration hook, as the engine runs them."""
    for s, n in b.prefills:
        s.filled += n
    if steps > 1:
        st.kv.grow_each([s.ctx for s in b.decodes], steps - 1)
    finished = []
    for s in b.decodes:
        s.generated += steps
        if s.generated >= s.output_len:
            st.running.remove(s)
            s.free(st.kv)
            finished.append(s)
    p.on_iteration_end(st, b, steps, finished)


def fills(b: Batch) -> list[int]:
    return [n for _, n in b.prefills]


def test_config_blocks_and_defaults():
    cfg = ParrotEngineConfig()
    assert cfg.kv_blocks(16000, 16) == 1000 and ParrotEngineConfig.runtime == "parrot"
    assert ParrotEngineConfig(num_kv_cache_blocks=4000).kv_blocks(16000, 16) == 4000
    assert cfg.max_num_batched_tokens == 2560 and cfg.max_total_tokens is None
    assert ParrotEnginePolicy.prefill_emits_token is False


def test_fifo_admission_limits():
    st = state(1000, seq(100, 5), seq(100, 5), seq(100, 5), seq(10, 5))
    assert fills(policy(max_num_batched_tokens=250).schedule(st)) == [100, 100]
    assert len(st.waiting) == 2  # FIFO: the small fourth job does not jump the queue
    st = state(1000, seq(10, 5), seq(10, 5), seq(10, 5))
    assert len(policy(max_batch_size=2).schedule(st).prefills) == 2


def test_fill_then_generate_and_mixed_batches():
    p = policy()
    a = seq(100, 3)
    st = state(1000, a)
    assert fills(step(p, st)) == [100] and a.generated == 0  # Fill emits no token
    b = seq(50, 3, arrived=1.0)
    st.waiting.append(b)
    batch = step(p, st)
    assert batch.prefills == [(b, 50)] and batch.decodes == [a]  # mixed iteration
    assert a.ctx.tokens == 101


def test_generate_job_queues_behind_a_fill_that_does_not_fit():
    p = policy(max_num_batched_tokens=200)
    x, a = seq(100, 50), seq(100, 50)
    st = state(1000, x)
    step(p, st)
    step(p, st)  # x decodes
    st.waiting.append(a)
    step(p, st)  # a fills beside x's decode
    big = seq(200, 5, arrived=2.0)
    st.waiting.appendleft(big)  # arrived before a's Generate job was queued
    batch = step(p, st)
    assert batch.decodes == [x] and not batch.prefills  # 1 + 200 > 200: a waits behind big


def test_max_total_tokens_holds_back_the_tail_without_freeing():
    p = policy(max_total_tokens=250)
    ss = [seq(100, 20, arrived=float(i)) for i in range(3)]
    st = state(1000, *ss)
    step(p, st)  # fills are counted by their context before the fill (0): all three fill
    used = st.kv.used_blocks
    batch = step(p, st)
    assert batch.decodes == ss[:2]
    assert list(st.waiting) == [ss[2]] and ss[2].ctx is not None
    assert st.kv.used_blocks == used + 0  # 101 tokens still fit in 7 blocks each
    assert step(p, st).decodes == ss[:2]


def test_fifo_v2_orders_running_jobs_by_app():
    def run(scheduler: str) -> list[Sequence]:
        a = seq(100, 20, arrived=0.0, app=5)
        b = seq(100, 20, arrived=1.0, app=2)
        p = policy(max_total_tokens=150, scheduler=scheduler)
        st = state(1000, a, b)
        step(p, st)
        return step(p, st).decodes, a, b

    decodes, a, _ = run("fifo")
    assert decodes == [a]
    decodes, _, b = run("fifo_v2")
    assert decodes == [b]


def test_tgi_runs_fills_first_and_pushes_generates_back():
    p = policy(scheduler="tgi")
    x = seq(100, 50)
    st = state(1000, x)
    step(p, st)
    assert step(p, st).decodes == [x]
    y, z = seq(30, 5, arrived=1.0), seq(40, 5, arrived=1.0)
    st.waiting.extend([y, z])
    batch = step(p, st)
    assert fills(batch) == [30, 40] and not batch.decodes
    assert st.waiting[0] is x  # the preempted Generate goes back to the head
    batch = step(p, st)
    assert batch.decodes == [x, y, z] and not batch.prefills


def test_forked_sequences_wait_for_the_prefix_and_fill_only_the_suffix():
    p = policy()
    st = state(1000)
    parent = ReadyCtx(None)
    parent.ready = False
    st.kv.grow(parent, 64)
    f = seq(80, 5, cached_len=64, prefix_ctx=parent)
    g = seq(30, 5, arrived=1.0)
    st.waiting.extend([f, g])
    batch = step(p, st)
    assert batch.prefills == [(g, 30)]  # f is not queued yet and does not block g
    parent.ready = True
    batch = step(p, st)
    assert batch.prefills == [(f, 16)] and batch.decodes == [g]
    assert f.ctx.parent is parent and f.kv_tokens == 80 and f.filled == 80


def test_chunked_fill():
    p = policy(fill_chunk_size=40)
    s = seq(100, 2)
    st = state(1000, s)
    assert [fills(step(p, st)) for _ in range(3)] == [[40], [40], [20]]
    assert step(p, st).decodes == [s]


def test_memory_never_crashes():
    p = policy()
    st = state(4, seq(60, 5), seq(40, 5, arrived=1.0))
    assert fills(step(p, st)) == [60]  # the second fill (3 blocks) does not fit in 0 free
    st = state(2, seq(16, 40), seq(16, 40, arrived=1.0))
    step(p, st)
    old, new = st.waiting  # both fills ran: their Generate jobs queued in order
    batch = step(p, st)  # both need a block, none is free: the newest is recomputed
    assert batch.decodes == [old] and new.ctx is None and new.preemptions == 1
    assert new.fill_target == 16 and st.kv.used_blocks == 2


def test_stable_decode_steps_bounds():
    p = policy()
    a, b = seq(10, 20), seq(10, 5)
    st = state(100, a, b)
    step(p, st)
    batch = p.schedule(st)
    assert p.stable_decode_steps(st, batch) == 5  # b finishes after 5 tokens
    p = policy(max_total_tokens=300)
    a, b = seq(100, 200), seq(100, 200)
    st = state(1000, a, b)
    step(p, st)
    batch = p.schedule(st)
    assert p.stable_decode_steps(st, batch) == 51  # 200 + 2k <= 300
    st2 = state(3, seq(15, 100), seq(15, 100))
    step(p, st2)
    assert p.stable_decode_steps(st2, p.schedule(st2)) == 1  # memory


def test_stuck_partial_fills_preempt_the_newest():
    p = policy(fill_chunk_size=64)
    a, b = seq(100, 5), seq(100, 5, arrived=1.0)
    st = state(10, a, b)
    assert fills(step(p, st)) == [64, 64]  # 8 of 10 blocks; each needs 3 more to finish
    batch = step(p, st)
    assert batch.prefills == [(a, 36)] and b.ctx is None and b.preemptions == 1
    assert b.filled == 0 and list(st.waiting) == [b, a]  # a's Generate queued behind b


def _random_scenario(seed: int, scheduler: str) -> tuple[ParrotEnginePolicy, EngineState]:
    rr = random.Random(seed)
    ss = [seq(rr.randint(5, 200), rr.randint(1, 80), arrived=float(rr.randint(0, 3)),
              app=rr.randint(0, 3)) for _ in range(rr.randint(1, 10))]
    p = policy(scheduler=scheduler, max_batch_size=rr.randint(1, 8),
               max_num_batched_tokens=rr.randint(50, 600),
               max_total_tokens=rr.choice([None, rr.randint(100, 1500)]),
               fill_chunk_size=rr.choice([None, rr.randint(8, 100)]))
    need = max(-(-(s.prompt_len + s.output_len) // 16) for s in ss)
    return p, state(max(need, rr.randint(14, 80)), *ss)


@pytest.mark.parametrize("scheduler", ["fifo", "fifo_v2", "tgi"])
def test_fast_forward_matches_stepping(scheduler: str):
    """Every stretch stable_decode_steps promises is what stepping one by one runs, and random
    workloads (tight memory, chunks, max_total_tokens) always drain."""
    for seed in range(40):
        p, st = _random_scenario(seed, scheduler)
        trace = []
        while (st.waiting or st.running) and len(trace) < 5000:
            b = step(p, st)
            trace.append((fills(b), [s.prompt_len for s in b.decodes]))
        assert len(trace) < 5000
        q, st2 = _random_scenario(seed, scheduler)
        i = 0
        while st2.waiting or st2.running:
            b = q.schedule(st2)
            k = q.stable_decode_steps(st2, b)
            assert all(trace[i + j] == (fills(b), [s.prompt_len for s in b.decodes])
                       for j in range(k)), (seed, i)
            apply(q, b, st2, k)
            i += k
        assert i == len(trace)


def test_constant_prefix_is_a_fill_job_of_its_own():
    """The artifact's Fill(constant prefix), Fill(rest), Generate: three jobs in turn."""
    p = policy()
    s = seq(100, 2, fill_breaks=(40,))
    st = state(1000, s)
    assert [fills(step(p, st)) for _ in range(2)] == [[40], [60]]
    assert step(p, st).decodes == [s]
    forked = seq(100, 2, fill_breaks=(40,), cached_len=40)  # prefix forked: no job for it
    assert fills(step(policy(), state(1000, forked))) == [60]


def test_generates_put_back_for_a_block_are_readmitted_as_the_walk_would():
    """Generates short of a block go back to the head of the queue (reversed) and the next
    iteration takes them without walking them: as many as the walk would admit, in its order,
    also when the batched-token budget stops it among them (None: all of them and nothing
    else, which the shortage step then decides)."""
    for budget in (3, 4, 100):
        p = policy(max_num_batched_tokens=budget)
        st = state(100)
        gens = [seq(10, 50, arrived=float(i)) for i in range(5)]
        kv = st.kv
        for s in gens:
            s.ctx = kv.create()
            kv.grow(s.ctx, 16)  # a full block: the next token needs another
            s.filled = s.fill_target
        st.running = gens[:1]
        st.waiting.extendleft(gens[1:])  # as schedule puts back gens[1:], in running order
        walked = p._admit(st)
        everything = [(s, 0) for s in reversed(gens[1:])]
        assert p._admit_after(st, gens[1:]) == (None if walked == everything else walked)
        assert len(walked) == min(4, budget - 1)
