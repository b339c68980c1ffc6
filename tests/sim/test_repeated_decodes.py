"""Repeated decode iterations (``EnginePolicy.repeated_decode_steps``) on a hand-built policy:
the engine runs them one event each with stepping's times, asks the policy only once per run,
counts the skipped decisions through ``on_repeated_step``, stamps first tokens at the end of the
first iteration (seen by a run stopped inside a run), and cuts a run when a call arrives or
the engine is notified (a waiting call's inputs completed)."""

import random

import simpy

from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.engine_policy import EnginePolicy, EngineState
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Batch, Sequence
from tests.sim.helpers import a100_13b

PROFILE = a100_13b()


class Lockstep(EnginePolicy):
    """Decodes every call it holds whose inputs are complete (it takes its prompt's KV on
    admission), one token each per iteration; ``repeat``: says how many iterations follow
    alike (until the first finish or the first new block)."""

    def __init__(self, repeat: bool) -> None:
        self.repeat = repeat
        self.decisions = 0  # schedule calls and repeated iterations: equal either way
        self.schedule_calls = 0

    def schedule(self, state: EngineState) -> Batch:
        self.decisions += 1
        self.schedule_calls += 1
        for s in [s for s in state.waiting if not s.waiting_inputs]:
            state.waiting.remove(s)
            s.ctx = state.kv.create()
            state.kv.grow(s.ctx, s.prompt_len)
            s.filled = s.prompt_len
            state.running.append(s)
        for s in state.running:
            state.kv.grow(s.ctx, 1)
        return Batch(decodes=state.running.copy())

    def repeated_decode_steps(self, state: EngineState, batch: Batch) -> int:
        if not self.repeat:
            return 1
        bs = state.kv.block_size
        return 1 + min(min(s.ctx.blocks * bs - s.ctx.tokens, s.output_len - s.generated - 1)
                       for s in batch.decodes)

    def on_repeated_step(self, state: EngineState) -> None:
        self.decisions += 1


def run(seed: int, repeat: bool, stop: float | None) -> tuple:
    rr = random.Random(seed)
    env = simpy.Environment()
    policy = Lockstep(repeat)
    log = []
    engine = Engine(env, 0, policy, CostModel(PROFILE), KVCache(4000, 16), lambda s, t: None,
                    recorder=lambda e, start, end, b, steps: log.append(
                        (start, end, [s.uid for s in b.decodes], steps)))
    seqs = [Sequence(uid, "a", "c", rr.randint(1, 40), rr.randint(2, 90)) for uid in range(8)]
    def complete_inputs(s: Sequence) -> None:  # as the Parrot client does
        s.waiting_inputs = 0
        engine.notify()

    for s in seqs:
        at = rr.choice([0.0, rr.uniform(0, 1.5)])
        env.timeout(at).callbacks.append(lambda _, s=s: engine.submit(s))
        if rr.random() < 0.3:  # its inputs complete later: the queue's length stays
            s.waiting_inputs = 1
            env.timeout(at + rr.uniform(0, 1.0)).callbacks.append(
                lambda _, s=s: complete_inputs(s))
    env.run(until=stop)
    return (log, [(s.first_token, s.finished) for s in seqs], engine.busy_time,
            engine.iterations, policy.decisions), policy.schedule_calls


def test_repeated_iterations_match_stepping():
    asked = stepped = 0
    for seed in range(40):
        expected, calls = run(seed, False, None)
        got, fewer = run(seed, True, None)
        assert got == expected, seed
        stepped += calls
        asked += fewer
    assert asked < 0.3 * stepped, (asked, stepped)


def test_stopped_inside_a_run_has_the_first_tokens():
    rr = random.Random(7)
    inside = 0
    for seed in range(60):
        stop = rr.uniform(0.01, 3.0)
        expected, _ = run(seed, False, stop)
        got, _ = run(seed, True, stop)
        assert got == expected, seed
        inside += any(t >= 0 > f for t, f in expected[1])
    assert inside > 10  # stopped while calls were decoding
