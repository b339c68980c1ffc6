"""The manager on hand-built engines and a stub policy: every decision sees up-to-date loads."""

import simpy

from parrotsim.sim.model.cluster_policy import CallInfo, ClusterPolicy
from parrotsim.sim.model.manager import Manager


class FirstEngineUpToTwo(ClusterPolicy):
    """Places each queued call on engine 0 while it holds fewer than two calls."""

    def dispatch(self, queue, engines, now):
        free = 2 - engines[0].num_requests
        return [(call, 0) for call in queue[:max(free, 0)]]


class Engine:
    engine_id = 0
    num_requests = 0

    def __init__(self) -> None:
        self.submitted = []

    def submit(self, seq) -> None:
        self.submitted.append(seq.call)

    def admission_problem(self, prompt_len: int, output_len: int, shared: int) -> None:
        return None  # every call fits


def call(name: str) -> CallInfo:
    return CallInfo(uid=hash(name) % 1000, app_id="a", app_seq=0, call=name, prompt_len=10,
                    output_len=1)


def test_a_call_released_by_a_dispatch_waits_for_the_loads_of_the_whole_decision():
    engine = Engine()
    calls = {n: call(n) for n in "abc"}
    manager: list[Manager] = []

    def released(info, seq):  # pipelined mode: dispatching a releases its consumer c
        if info.call == "a":
            manager[0].arrive(calls["c"])

    m = Manager(simpy.Environment(), [engine], FirstEngineUpToTwo(), on_done=lambda i, s: None,
                on_dispatch=released)
    manager.append(m)
    m.queue = [calls["a"], calls["b"]]
    m._dispatch()
    assert engine.submitted == ["a", "b"]  # c did not jump in between on a stale load
    assert m.loads[0].num_requests == 2 and [c.call for c in m.queue] == ["c"]
