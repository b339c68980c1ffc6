"""The iteration after a stuck one (policies/engine/parrot_after_stuck.py) on a hand-built
engine: four Generates each with a full block fill a four-block cache, so nothing can run; the
oldest runs alone after the newest is preempted, and the next iteration is decided by the
shortage step from what the stuck one remembered. Each step is compared with the original
one-walk scheduler (``parrot_engine_reference``), also when the queue changed in between so
that what was remembered no longer describes its head."""

from parrotsim.policies.engine.parrot import ParrotEngineConfig
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.kv_cache import KVCache
from tests.policies.parrot_engine_reference import ReferenceParrotEnginePolicy
from tests.policies.test_parrot_engine import apply, seq


def stuck_engine(reference: bool):
    """Running a, b, c, d (16 tokens each, one full block each) in a 4-block cache."""
    cfg = ParrotEngineConfig(max_batch_size=8, max_num_batched_tokens=100)
    p = ReferenceParrotEnginePolicy(cfg) if reference else cfg.make()
    st = EngineState(KVCache(4, 16))
    jobs = [seq(16, 40, arrived=float(i)) for i in range(4)]
    for s in jobs:
        s.filled = s.fill_target
        s.ctx = st.kv.create()
        st.kv.grow(s.ctx, 16)
    st.running = list(jobs)
    p._in_order = not reference  # running is in running order
    return p, st, jobs


def snapshot(b, st, p, jobs):
    name = {id(s): i for i, s in enumerate(jobs)}
    return ([(name.get(id(s), s.uid), n) for s, n in b.prefills],
            [name.get(id(s), s.uid) for s in b.decodes],
            [name.get(id(s), s.uid) for s in st.running],
            [name.get(id(s), s.uid) for s in st.waiting],
            st.kv.used_blocks, p.memory_stalls)


def run(reference: bool, between=None, steps: int = 4):
    p, st, jobs = stuck_engine(reference)
    out = []
    for i in range(steps):
        b = p.schedule(st)
        out.append(snapshot(b, st, p, jobs))
        apply(p, b, st, 1)
        if i == 0 and between is not None:
            between(st, jobs)
    return out, p


def test_after_stuck_decides_as_the_full_walk():
    got, p = run(False)
    want, _ = run(True)
    assert got == want
    # stuck: a runs alone after d is preempted; then a decodes, b and c wait for a block
    # behind it, d (a Fill now) stays behind them
    assert got[0][1] == [0] and got[0][3] == [3, 2, 1]
    assert got[1][1] == [0] and got[1][3] == [2, 1, 3]


def test_a_changed_queue_head_goes_to_the_full_walk():
    """The queue changed after the stuck iteration: a job put at its head, a held-back Generate
    gone, another in its place (with the same blocks in use: only the check that the queue
    still starts with the remembered jobs sends it to the full walk)."""
    def jump_in(st, jobs):
        new = seq(5, 3, arrived=9.0)
        jobs.append(new)
        st.waiting.appendleft(new)

    def drop_generate(st, jobs):
        st.waiting.remove(jobs[2])
        jobs[2].free(st.kv)

    def swap(which: int):
        return lambda st, jobs: swap_generate(st, jobs, which)

    def swap_generate(st, jobs, which):  # b or c leaves; e, as long, takes its block and place
        c = jobs[which]
        i = st.waiting.index(c)
        del st.waiting[i]
        c.free(st.kv)
        e = seq(16, 40, arrived=9.0)
        e.filled = e.fill_target
        e.ctx = st.kv.create()
        st.kv.grow(e.ctx, 16)
        jobs.append(e)
        st.waiting.insert(i, e)

    for between in (jump_in, drop_generate, swap(1), swap(2)):
        got, _ = run(False, between)
        want, _ = run(True, between)
        assert got == want


def short_then_stuck_engine(reference: bool, limit: int | None = None):
    """A 4-block cache: a, c, d hold a full block each, b has one slot left. The first step
    grows only b (the others are held back); the next finds b short too: nothing can run."""
    cfg = ParrotEngineConfig(max_batch_size=8, max_num_batched_tokens=100,
                             max_total_tokens=limit)
    p = ReferenceParrotEnginePolicy(cfg) if reference else cfg.make()
    st = EngineState(KVCache(4, 16))
    jobs = [seq(16 if i != 1 else 15, 40, arrived=float(i)) for i in range(4)]
    for s in jobs:
        s.filled = s.fill_target
        s.ctx = st.kv.create()
        st.kv.grow(s.ctx, s.prompt_len)
    st.running = list(jobs)
    p._in_order = not reference
    return p, st, jobs


def test_stuck_right_after_a_held_back_step_decides_as_the_full_walk():
    for limit in (None, 1000, 63, 40):  # 63: the stuck walk would hold d back; 40: each walk
        runs = []
        for reference in (False, True):
            p, st, jobs = short_then_stuck_engine(reference, limit)
            out = []
            for _ in range(6):
                b = p.schedule(st)
                out.append(snapshot(b, st, p, jobs))
                apply(p, b, st, 1)
            runs.append(out)
        assert runs[0] == runs[1], limit
    got = runs[0]
    assert got[0][1] == [1] and got[0][3] == [3, 2, 0]  # b grows; a, c, d held back
