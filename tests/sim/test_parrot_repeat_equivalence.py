"""An engine running the shipped Parrot policy, which lets it repeat decode iterations short of
KV blocks without asking the policy again (``Engine._next_repeated``,
``ParrotEnginePolicy.repeated_decode_steps``), does exactly what it did with the one-walk
original policy (``parrot_engine_reference``, which never repeats), on random scenarios short
of KV blocks most of the time: the same iterations (start, end, batch, steps, KV blocks used and
peak, waiting queue), the same finishing order and times, per-call stamps, stall counts and
engine totals, with arrivals, late inputs and late prefixes (each notifying the engine, as the
client and the prefix cache do) and KV blocks freed without a notification (a cached prefix
dropped) landing during runs of repeated iterations; with ``max_total_tokens``, each scheduler,
a profile with and without the skewed-batch excess, fast-forward on and off; and stopped at a
random time (the stamps of calls still running, and the totals, as stepping left them)."""

import random

import pytest
import simpy

from parrotsim.policies.engine.parrot import ParrotEngineConfig
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.profile import load_profile
from parrotsim.sim.model.sequence import Sequence
from tests.policies.parrot_engine_reference import ReferenceParrotEnginePolicy

PROFILES = {name: load_profile(name) for name in ("a6000_llama-7b", "h200_llama-7b")}


def scenario(seed: int, scheduler: str) -> dict:
    """Config, KV blocks and timed events drawn from ``seed`` (equal seeds, equal scenarios)."""
    rr = random.Random(seed)
    cfg = ParrotEngineConfig(
        scheduler=scheduler, max_batch_size=rr.randint(12, 64),
        max_num_batched_tokens=rr.choice([rr.randint(60, 800), rr.randint(60, 800)]),
        max_total_tokens=rr.choice([None, None, rr.randint(300, 1500)]),
        fill_chunk_size=rr.choice([None, None, rr.randint(8, 100)]))
    calls, t = [], 0.0
    for _ in range(rr.randint(12, 40)):
        t += rr.expovariate(rr.choice([5.0, 50.0, 500.0]))
        kind = rr.random()
        calls.append((t, rr.randint(5, 60), rr.randint(10, 160),
                      "fork" if kind < 0.3 else "late" if kind < 0.4 else "plain",
                      t + rr.uniform(0.0, 2.0)))  # the late call's inputs complete then
    need = max(-(-(p + o + 32) // 16) for _, p, o, _, _ in calls) + 3
    return {"cfg": cfg, "blocks": max(need, rr.randint(14, 40)), "calls": calls,
            "prefix_ready": rr.uniform(0.0, 1.0), "drop_extra": rr.uniform(0.0, t + 1.0),
            "stop": rr.uniform(0.2, t + 3.0)}


def run(seed: int, scheduler: str, profile: str, reference: bool, fast_forward: bool,
        stop: bool = False) -> tuple:
    sc = scenario(seed, scheduler)
    env = simpy.Environment()
    kv = KVCache(sc["blocks"], 16)
    prefix = kv.create()
    kv.grow(prefix, 32)
    prefix.ready = False
    extra = kv.create()  # a cached prefix the cache drops at some point: blocks come free
    kv.grow(extra, 40)
    cfg = sc["cfg"]
    policy = ReferenceParrotEnginePolicy(cfg) if reference else cfg.make()
    log, finished, repeated = [], [], [0]

    def record(engine, start, end, batch, steps):
        log.append((start, end, [(s.uid, n) for s, n in batch.prefills],
                    [s.uid for s in batch.decodes], steps, engine.kv.used_blocks,
                    engine.kv.peak_blocks, [s.uid for s in engine.state.waiting]))
        run = engine._repeat
        repeated[0] += run is not None and run.step > 0

    engine = Engine(env, 0, policy, CostModel(PROFILES[profile]), kv,
                    on_finish=lambda s, t: finished.append((s.uid, t)),
                    kernel="shared_prefix", fast_forward=fast_forward, recorder=record)

    def later(at: float, action) -> None:
        env.timeout(at).callbacks.append(lambda _: action())

    def ready_prefix() -> None:
        prefix.ready = True
        engine.notify()

    def complete_inputs(s: Sequence) -> None:
        s.waiting_inputs = 0
        engine.notify()

    later(sc["prefix_ready"], ready_prefix)
    later(sc["drop_extra"], lambda: kv.release(extra))
    seqs = []
    for uid, (at, prompt, output, kind, inputs_at) in enumerate(sc["calls"]):
        if kind == "fork":
            s = Sequence(uid, f"a{uid % 3}", "c", prompt + 32, output, order=(uid % 3, uid),
                         cached_len=32, prefix_ctx=prefix)
        else:
            s = Sequence(uid, f"a{uid % 3}", "c", prompt, output, order=(uid % 3, uid))
        if kind == "late":
            s.waiting_inputs = 1
            later(inputs_at, lambda s=s: complete_inputs(s))
        seqs.append(s)
        later(at, lambda s=s: engine.submit(s))
    env.run(until=sc["stop"] if stop else None)
    calls_out = [(s.uid, s.arrived, s.admitted, s.first_token, s.last_fill, s.finished,
                  s.preemptions) for s in seqs]
    if not stop:  # counters of a stopped run may lag inside a run of repeated iterations
        calls_out += [(s.generated, s.filled, s.fill_target) for s in seqs]
    out = (log, finished, calls_out, engine.busy_time, engine.iterations,
           engine.batched_seqs, policy.memory_stalls, kv.used_blocks, kv.peak_blocks)
    return out, repeated[0]


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("scheduler", ["fifo", "fifo_v2", "tgi"])
@pytest.mark.parametrize("fast_forward", [True, False])
def test_same_runs_as_the_reference(profile: str, scheduler: str, fast_forward: bool):
    iterations = repeated = 0
    for seed in range(40):
        expected, none = run(seed, scheduler, profile, True, fast_forward)
        assert none == 0
        assert len(expected[1]) == len(scenario(seed, scheduler)["calls"])  # all finished
        got, n = run(seed, scheduler, profile, False, fast_forward)
        assert got == expected, seed
        iterations += len(expected[0])
        repeated += n
    if fast_forward and scheduler != "tgi":  # the repeats are exercised
        assert repeated > 0.2 * iterations, (repeated, iterations)
    else:
        assert repeated == 0


@pytest.mark.parametrize("scheduler", ["fifo", "fifo_v2"])
def test_same_state_when_stopped_mid_run(scheduler: str):
    """Stopped at a random time (inside runs of repeated iterations often): the iterations so
    far, first-token stamps of calls still decoding, stall counts and busy time as stepped."""
    for seed in range(60):
        expected, _ = run(seed, scheduler, "a6000_llama-7b", True, True, stop=True)
        got, _ = run(seed, scheduler, "a6000_llama-7b", False, True, stop=True)
        assert got == expected, seed
