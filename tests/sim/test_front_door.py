"""The front end served between iterations (sim/model/front_door.py) on hand-built engines."""
import pytest
import simpy

from parrotsim.policies.engine.parrot import ParrotEngineConfig
from parrotsim.policies.engine.vllm import VllmConfig
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.front_door import FASTCHAT_ADMIT_WAITS, PARROT_REQUEST_WAITS, FrontDoor
from parrotsim.sim.model.kv_cache import KVCache
from tests.sim.helpers import a100_13b, seq


def _run(front_door: bool, arrivals: list[tuple[float, int, int]], fast_forward: bool = True,
         policy: str = "vllm"):
    """Calls (arrival s, prompt, output) on one engine; returns (engine, starts of every
    iteration, {uid: (first prefill start, answer time)})."""
    env = simpy.Environment()
    cfg = (VllmConfig(front_door=front_door) if policy == "vllm"
           else ParrotEngineConfig(front_door=front_door, max_num_batched_tokens=8000))
    starts, answers, admitted = [], {}, {}
    eng = Engine(env, 0, cfg.make(), CostModel(a100_13b(), cfg.runtime), KVCache(4000, 16),
                 lambda s, t: answers.__setitem__(s.uid, t), fast_forward=fast_forward,
                 recorder=lambda e, start, end, batch, steps: (
                     starts.extend(start + (end - start) * j / steps for j in range(steps)),
                     [admitted.setdefault(s.uid, start) for s, _ in batch.prefills]))
    for uid, (t, prompt, output) in enumerate(arrivals):
        s = seq(prompt, output)
        s.uid = uid
        env.process(_submit_at(env, eng, s, t))
    env.run()
    return eng, starts, {u: (admitted[u], answers[u]) for u in answers}


def _submit_at(env, eng, s, t):
    yield env.timeout(t)
    eng.submit(s)


def _ends_before(starts, t0, t1):
    """Iteration boundaries in (t0, t1]: the starts of iterations after the first, as times."""
    return sum(t0 < s <= t1 for s in starts)


def test_a_call_into_a_busy_fastchat_worker_is_scheduled_at_the_sixth_iteration_end():
    # call 0 decodes for 100 steps from t=0; call 1 arrives mid-iteration at t=0.5 s
    for ff in (True, False):
        _, starts, out = _run(True, [(0.0, 100, 100), (0.5, 100, 5)], fast_forward=ff)
        admitted, _ = out[1]
        assert _ends_before(starts, 0.5, admitted) == FASTCHAT_ADMIT_WAITS + 1
        _, starts0, out0 = _run(False, [(0.0, 100, 100), (0.5, 100, 5)], fast_forward=ff)
        assert _ends_before(starts0, 0.5, out0[1][0]) == 1  # without: the next iteration


def test_the_answer_leaves_one_iteration_after_the_call_finished():
    calls = [(0.0, 100, 100), (0.0, 100, 10)]
    for ff in (True, False):
        _, starts, out = _run(True, calls, fast_forward=ff)
        _, _, out0 = _run(False, calls, fast_forward=ff)
        finished = out0[1][1]  # without: the end of the iteration that made its 10th token
        assert out[1][0] == out0[1][0]  # same timeline up to there
        next_end = min(t for t in starts if t > finished + 1e-9)  # (exact when stepping)
        assert out[1][1] == (next_end if not ff else pytest.approx(next_end, rel=1e-9))
        # the last call's answer: the engine went idle at once
        assert out[0][1] == pytest.approx(out0[0][1], rel=1e-12)


def test_an_idle_engine_serves_the_calls_at_once():
    _, _, out = _run(True, [(0.0, 100, 5), (10.0, 100, 5)])
    _, _, out0 = _run(False, [(0.0, 100, 5), (10.0, 100, 5)])
    assert out == out0


def test_held_calls_count_as_load_and_join_in_arrival_order():
    env = simpy.Environment()
    cfg = VllmConfig(front_door=True)
    eng = Engine(env, 0, cfg.make(), CostModel(a100_13b(), "vllm"), KVCache(4000, 16),
                 lambda s, t: None)
    first = seq(100, 50)
    eng.submit(first)
    env.run(until=1e-6)  # the first iteration runs
    late = [seq(100, 5) for _ in range(3)]
    for i, s in enumerate(late):
        s.uid = 10 + i
        eng.submit(s)
    assert eng.num_requests == 4 and not eng.state.waiting
    env.run()
    assert [s.admitted for s in late] == sorted(s.admitted for s in late)


def test_parrot_waits_two_iteration_ends_per_request():
    s = seq(500, 10)
    policy = ParrotEngineConfig(front_door=True).make()
    assert policy.front_door_waits(s) == 2 * PARROT_REQUEST_WAITS  # Fill, Generate
    s.fill_breaks = (40,)
    assert policy.front_door_waits(s) == 3 * PARROT_REQUEST_WAITS  # and Fill(constant)
    s.cached_len = 40
    assert policy.front_door_waits(s) == 2 * PARROT_REQUEST_WAITS  # its prefix is cached
    _, starts, out = _run(True, [(0.0, 100, 100), (0.5, 100, 5)], policy="parrot")
    assert _ends_before(starts, 0.5, out[1][0]) == 2 * PARROT_REQUEST_WAITS + 1


def test_front_door_pops_due_items_in_arrival_order():
    door = FrontDoor()
    a, b, c = seq(1, 1), seq(1, 1), seq(1, 1)
    door.hold(a, 7)
    door.hold(b, 5)
    door.hold(c, 5)
    assert door.next_due() == 5 and len(door) == 3
    assert door.admit(5) == [b, c]
    assert door.admit(6) == [] and door.admit() == [a]
    door.answer_later(a, 3)
    assert door.next_due() == 3 and door.answers(2) == [] and door.answers(3) == [a]
