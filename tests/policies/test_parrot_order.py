"""The Parrot engine's running order (policies/engine/parrot_order.py). merge_tail: a running
list sorted before the admitted jobs joined it is put back in running order by placing only
the admitted jobs, the same list, element for element, as the stable full sort it replaces,
ties included. The policy's ``_in_order`` flag, which decides between the two, is never True
while ``running`` is out of order, after any decision of random small scenarios (tight memory,
stuck iterations, each scheduler)."""

import random
from operator import attrgetter

import pytest

from parrotsim.policies.engine.parrot_order import merge_tail
from tests.policies.test_parrot_engine_equivalence import trace


class Job:
    def __init__(self, arrived: float, uid: int) -> None:
        self.arrived, self.uid = arrived, uid

    def __repr__(self) -> str:
        return f"Job({self.arrived}, {self.uid})"


ORDER = attrgetter("arrived", "uid")
BY_ARRIVAL = attrgetter("arrived")  # ties: the stable sort keeps list order


def _check(running, admitted, key):
    expected = sorted(running, key=key) + admitted
    expected.sort(key=key)
    got = sorted(running, key=key) + admitted
    merge_tail(got, len(running), key)
    assert [id(j) for j in got] == [id(j) for j in expected]


def test_held_back_jobs_return_to_their_place():
    # running holds jobs 0-4 and 8-9; jobs 5-7 come back reversed (held back), 10-11 are new
    jobs = [Job(float(i), i) for i in range(12)]
    running = jobs[:5] + jobs[8:10]
    _check(running, [jobs[7], jobs[6], jobs[5], jobs[10], jobs[11]], ORDER)
    got = running.copy()
    got += [jobs[7], jobs[6], jobs[5], jobs[10], jobs[11]]
    merge_tail(got, len(running), ORDER)
    assert got == jobs


@pytest.mark.parametrize("key", [ORDER, BY_ARRIVAL])
def test_random_cases_equal_the_stable_sort(key):
    rng = random.Random(7)
    uid = 0
    for _ in range(500):
        n, k = rng.randrange(0, 40), rng.randrange(0, 30)  # k past MERGE_MAX too
        jobs = []
        for _ in range(n + k):
            jobs.append(Job(float(rng.randrange(6)), uid))  # few arrival times: many ties
            uid += 1
        _check(jobs[:n], jobs[n:], key)


@pytest.mark.parametrize("scheduler", ["fifo", "fifo_v2", "tgi"])
def test_in_order_flag_holds(scheduler):
    seen = {"checked": 0, "stuck": 0}

    def check(p, b, st, t):
        if p._in_order:
            assert st.running == sorted(st.running, key=p._key), t
            seen["checked"] += 1
        if not b.empty:
            seen["stuck"] += len(b.prefills) + len(b.decodes) == 1 and len(st.waiting) > 0

    for seed in [*range(60), *range(1000, 1040)]:
        trace(seed, scheduler, False, True, shortage=seed >= 1000, on_schedule=check)
    checked, stuck = seen["checked"], seen["stuck"]
    assert checked > 500 and stuck > 50, (checked, stuck)
