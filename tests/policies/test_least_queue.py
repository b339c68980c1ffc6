"""FastChat's shortest-queue dispatch: the heap gives exactly the linear scan's choices."""

import random

from parrotsim.policies.cluster.least_queue import LeastQueue


def scan_choice(counters: list[int]) -> int:
    """FastChat's choice: the first worker with the smallest counter."""
    return counters.index(min(counters))


def test_heap_dispatch_equals_the_scan_with_heartbeats():
    rng = random.Random(7)
    for engines in (1, 2, 5, 64):
        policy = LeastQueue(engines, 45.0)
        reference = [0] * engines
        for _ in range(300):
            if rng.random() < 0.1:  # a heartbeat brings true queue lengths, ties included
                true = [rng.randint(0, 3) for _ in range(engines)]
                policy.on_heartbeat([], true, 0.0)
                reference[:] = true
            calls = list(range(rng.randint(1, 7)))
            got = [engine for _, engine in policy.dispatch(calls, [], 0.0)]
            want = []
            for _ in calls:
                best = scan_choice(reference)
                reference[best] += 1
                want.append(best)
            assert got == want and policy.counters == reference
