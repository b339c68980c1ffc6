"""The shipped Parrot engine scheduler decides exactly as the one-walk-per-decision original
(``parrot_engine_reference``) on random small states: same batches, same fast-forward lengths,
same queues, KV use and stall counts after every step, under tight memory, chunked fills,
constant-prefix breaks, forks of prefixes that become ready late, inputs that complete late,
``max_total_tokens``, and each scheduler; and on scenarios short of KV blocks most of the time
(many long Generates in a small cache), where held-back Generates wait at the head of the queue
and the shortage step (``parrot_shortage.short_step``) decides."""

import itertools
import random

import pytest

from parrotsim.policies.engine.parrot import ParrotEngineConfig
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Batch, Sequence
from tests.policies.parrot_engine_reference import ReferenceParrotEnginePolicy
from tests.policies.test_parrot_engine import apply


def scenario(seed: int, scheduler: str, reference: bool, shortage: bool = False):
    """A policy, an engine state and the sequences still to arrive ((step, seq) pairs), all
    drawn from ``seed``: two calls with equal seeds give equal, independent scenarios.
    ``shortage``: larger batches of short prompts with long outputs in a small cache."""
    rr = random.Random(seed)
    cfg = ParrotEngineConfig(
        scheduler=scheduler,
        max_batch_size=rr.randint(12, 64) if shortage else rr.randint(1, 8),
        max_num_batched_tokens=rr.choice([rr.randint(40, 600), rr.randint(40, 600),
                                          rr.randint(1, 6)]),
        max_total_tokens=rr.choice([None, None, rr.randint(100, 1500)]),
        fill_chunk_size=rr.choice([None, rr.randint(8, 100)]))
    policy = ReferenceParrotEnginePolicy(cfg) if reference else cfg.make()
    kv = KVCache(rr.randint(14, 40) if shortage else rr.randint(14, 90), 16)
    prefix = kv.create()
    kv.grow(prefix, 32)
    prefix.ready = rr.random() < 0.5
    st = EngineState(kv)
    arrivals = []
    for uid in range(rr.randint(12, 40) if shortage else rr.randint(1, 14)):
        if shortage:
            prompt, output = rr.randint(5, 60), rr.randint(10, 120)
        else:
            prompt, output = rr.randint(5, 200), rr.randint(1, 60)
        kind = rr.random()
        if kind < 0.25:  # a fork of the shared prefix
            s = Sequence(uid, f"app{uid % 3}", "c", prompt + 32, output, order=(uid % 3, uid),
                         cached_len=32, prefix_ctx=prefix)
        elif kind < 0.4:  # a constant prefix filled by a job of its own
            s = Sequence(uid, f"app{uid % 3}", "c", prompt + 20, output, order=(uid % 3, uid),
                         fill_breaks=(20,))
        else:
            s = Sequence(uid, f"app{uid % 3}", "c", prompt, output, order=(uid % 3, uid))
        s.waiting_inputs = 1 if rr.random() < 0.15 else 0
        arrivals.append((rr.randint(0, 60 if shortage else 30), s))
    arrivals.sort(key=lambda a: a[0])
    need = max(-(-(s.prompt_len + s.output_len) // 16) for _, s in arrivals) + 3
    if kv.num_blocks < need:
        kv.num_blocks = need
    return policy, st, arrivals, prefix, rr


def snapshot(p, b: Batch, st: EngineState, steps: int) -> tuple:
    return ([(s.uid, n) for s, n in b.prefills], [s.uid for s in b.decodes], steps,
            [s.uid for s in st.waiting], [s.uid for s in st.running], st.kv.used_blocks,
            st.kv.peak_blocks, p.memory_stalls,
            [(s.uid, s.filled, s.fill_target, s.preemptions) for s in (*st.waiting,
                                                                        *st.running)])


def trace(seed: int, scheduler: str, reference: bool, fast_forward: bool,
          shortage: bool = False, on_schedule=None) -> list[tuple]:
    """The decisions of one scenario; ``on_schedule(policy, batch, state, t)`` is called after
    every ``schedule`` (a hook for invariants checked along the way)."""
    p, st, arrivals, prefix, rr = scenario(seed, scheduler, reference, shortage)
    out, t = [], 0
    while (arrivals or st.waiting or st.running) and t < 3000:
        while arrivals and arrivals[0][0] <= t:
            s = arrivals.pop(0)[1]
            p.accept(s)
            s.arrived = float(t)
            st.waiting.append(s)
        if rr.random() < 0.1:
            prefix.ready = True
        for s in st.waiting:
            if s.waiting_inputs and rr.random() < 0.2:
                s.waiting_inputs = 0
        b = p.schedule(st)
        if on_schedule is not None:
            on_schedule(p, b, st, t)
        if b.empty:
            out.append(("idle", t))
            t += 1
            continue
        steps = p.stable_decode_steps(st, b) if fast_forward else 1
        out.append(snapshot(p, b, st, steps))
        apply(p, b, st, steps)
        t += steps
    return out


@pytest.mark.parametrize("scheduler", ["fifo", "fifo_v2", "tgi"])
@pytest.mark.parametrize("fast_forward", [True, False])
def test_same_decisions_as_the_reference(scheduler: str, fast_forward: bool):
    for seed in range(150):
        expected = trace(seed, scheduler, True, fast_forward)
        assert len(expected) > 1
        assert trace(seed, scheduler, False, fast_forward) == expected, seed


@pytest.mark.parametrize("scheduler", ["fifo", "fifo_v2", "tgi"])
@pytest.mark.parametrize("fast_forward", [True, False])
def test_same_decisions_short_of_blocks(scheduler: str, fast_forward: bool):
    """Most iterations hold Generates back for want of a block (each bumps ``memory_stalls``,
    the snapshot's 8th field): the decisions still match the reference's."""
    steps = short = 0
    for seed in range(1000, 1040):
        expected = trace(seed, scheduler, True, fast_forward, shortage=True)
        assert trace(seed, scheduler, False, fast_forward, shortage=True) == expected, seed
        runs = [e for e in expected if e[0] != "idle"]
        steps += len(runs)
        short += sum([b[7] > a[7] for a, b in itertools.pairwise(runs)])
    assert short > 0.4 * steps, (short, steps)
