"""The engine running the shipped vLLM policy (decode ledger: no pass over the batch per
stretch) does exactly what it did with the per-sequence policy (``vllm_engine_reference``) on
random scenarios: same iterations (times, batches, steps, KV blocks used and peak at each),
same finishing order and times, same per-call stamps and preemptions, the same longest
context per decode batch (``Engine.longest_context``), under tight memory
(preemption), block sizes 4 and 16, forks of a cached prefix, arrivals that cut stretches,
fast-forwarding on (lazy ledger) and off (eager)."""

import random

import pytest
import simpy

from parrotsim.policies.engine.vllm import VllmConfig
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Sequence
from tests.policies.vllm_engine_reference import ReferenceVllmPolicy
from tests.sim.helpers import a100_13b

PROFILE = a100_13b()


def scenario(seed: int) -> tuple[VllmConfig, int, int, list[tuple[float, int, int, bool]]]:
    """A config, KV blocks, block size and calls (arrival s, prompt, output, forks the
    prefix) drawn from ``seed``."""
    rr = random.Random(seed)
    bs = rr.choice([4, 16])
    cfg = VllmConfig(max_num_batched_tokens=rr.randint(340, 4000),
                     max_num_seqs=rr.randint(2, 48), watermark=rr.choice([0.0, 0.01, 0.1]))
    calls = []
    t = 0.0
    for _ in range(rr.randint(1, 60)):
        t += rr.expovariate(rr.choice([2.0, 20.0, 200.0]))
        calls.append((t, rr.randint(1, 300), rr.randint(1, 120), rr.random() < 0.2))
    # one call alone always fits beside the prefix and the watermark (else vLLM stalls)
    biggest = max(-(-(p + o) // bs) for _, p, o, _ in calls) + 32 // bs + 1
    blocks = int((biggest + 1) / (1 - cfg.watermark)) + 1 + rr.randint(0, 6 * biggest)
    return cfg, blocks, bs, calls


def run(seed: int, reference: bool, fast_forward: bool) -> tuple:
    cfg, blocks, bs, calls = scenario(seed)
    env = simpy.Environment()
    kv = KVCache(blocks, bs)
    prefix = kv.create()
    kv.grow(prefix, 32)
    policy = ReferenceVllmPolicy(cfg) if reference else cfg.make()
    log, finished = [], []

    def record(engine, start, end, batch, steps):
        log.append((start, end, [(s.uid, n) for s, n in batch.prefills],
                    [s.uid for s in batch.decodes], steps, engine.kv.used_blocks,
                    engine.kv.peak_blocks, [s.uid for s in engine.state.waiting],
                    engine.longest_context(batch)))

    engine = Engine(env, 0, policy, CostModel(PROFILE), kv,
                    on_finish=lambda s, t: finished.append((s.uid, t)),
                    fast_forward=fast_forward, recorder=record)
    seqs = []
    for uid, (at, prompt, output, fork) in enumerate(calls):
        if fork:
            s = Sequence(uid, "a", "c", prompt + 32, output, cached_len=32, prefix_ctx=prefix)
        else:
            s = Sequence(uid, "a", "c", prompt, output)
        seqs.append(s)
        env.timeout(at).callbacks.append(lambda _, s=s: engine.submit(s))
    env.run()
    calls_out = [(s.uid, s.arrived, s.admitted, s.first_token, s.last_fill, s.finished,
                  s.preemptions, s.generated, s.filled, s.fill_target) for s in seqs]
    return (log, finished, calls_out, engine.busy_time, engine.iterations,
            engine.batched_seqs, kv.used_blocks, kv.peak_blocks, kv.live_contexts)


@pytest.mark.parametrize("fast_forward", [True, False])
def test_same_runs_as_the_reference(fast_forward: bool):
    preempted = 0
    for seed in range(250):
        expected = run(seed, True, fast_forward)
        assert len(expected[1]) == len(scenario(seed)[3])  # every call finished
        assert run(seed, False, fast_forward) == expected, seed
        preempted += any(c[6] for c in expected[2])
    assert preempted > 20  # the scenarios exercise preemption
