"""The shipped Parrot cluster scheduler (loads kept between dispatches, engines found by prefix
key and by a heap of free slots) decides exactly as the rank-every-engine original
(``parrot_cluster_reference``) over random runs of a small cluster: same placements after every
dispatch, with calls arriving, finishing and being rejected, prefix contexts appearing and
expiring, in both modes and with every switch, tight request and token capacities, objectives,
hints, task groups and shared prefixes; and, with prefix affinity on and engines keeping the
prefix contexts of the calls dispatched to them (as the Parrot mechanics do), the search among
the engines holding a call's prefix."""

import random

import pytest

from parrotsim.policies.cluster.parrot import ParrotSchedulerConfig
from parrotsim.sim.model.cluster_policy import CallInfo, EngineLoad
from tests.policies.parrot_cluster_reference import ReferenceParrotScheduler

KEYS = ["a", "a+1", "a+2", "b", "b+1", "c"]


def config(rr: random.Random) -> ParrotSchedulerConfig:
    return ParrotSchedulerConfig(
        mode=rr.choice(["paper", "paper", "artifact"]), dag_aware=rr.random() < 0.4,
        app_fifo=rr.random() < 0.4, ctx_aware=rr.random() < 0.6,
        deduction=rr.random() < 0.8, task_groups=rr.random() < 0.8,
        max_requests_per_engine=rr.randint(1, 6),
        tokens_capacity=rr.choice([None, None, rr.randint(300, 2000)]),
        latency_max_requests=rr.randint(1, 4), latency_max_tokens=rr.randint(200, 2000))


def calls(rr: random.Random, n: int) -> list[tuple[int, CallInfo]]:
    """(arrival step, call) pairs; apps of 1-4 calls at depths 0-2, spread out or in bursts."""
    out, uid = [], 0
    spread = rr.choice([2, 40])
    for app in range(n):
        step = rr.randint(0, spread)
        for _ in range(rr.randint(1, 4)):
            depth = rr.randint(0, 2)
            root = rr.choice(["a", "b", "c", None])
            keys = () if root is None else tuple(k for k in KEYS if k.startswith(root))
            keys = keys[:rr.randint(0, len(keys))]
            prompt = rr.randint(10, 400)
            c = CallInfo(uid=uid, app_id=f"app{app}", app_seq=app, call=f"c{uid}",
                         prompt_len=prompt, output_len=rr.randint(1, 100),
                         max_requests=rr.choice([None, None, None, rr.randint(1, 5)]),
                         prefix_keys=keys, prefix_lens=tuple(sorted(
                             rr.randint(0, prompt) for _ in keys)),
                         shared_prefix=rr.choice([None, *keys]) if keys else None,
                         objective=rr.choice([None, "latency", "throughput"]),
                         task_group=rr.choice([None, None, f"app{app}/g"]), depth=depth)
            out.append((step + depth, c))
            uid += 1
    return sorted(out, key=lambda a: (a[0], a[1].uid))


class MiniManager:
    """The manager's load accounting (``Manager._dispatch_once``/``_release``) around a policy,
    with the cluster's events drawn from a random stream of its own."""

    def __init__(self, policy, engines: int, limits: list[tuple[int, int]], tracked: bool,
                 keeps_prefixes: bool = False):
        self.policy = policy
        self.keeps_prefixes = keeps_prefixes  # a dispatched call's prefixes stay on its engine
        self.loads = [EngineLoad(i, max_requests=r, tokens_capacity=t)
                      for i, (r, t) in enumerate(limits)]
        if not tracked:
            for e in self.loads:
                e.prefixes = set()
        self.queue: list[CallInfo] = []
        self.running: list[tuple[CallInfo, int]] = []

    def dispatch(self, now: float, reject: set[int]) -> list[tuple[int, int]]:
        decisions = self.policy.dispatch(list(self.queue), self.loads, now)
        chosen = {c.uid for c, _ in decisions}
        self.queue = [c for c in self.queue if c.uid not in chosen]
        for c, i in decisions:
            load = self.loads[i]
            load.num_requests += 1
            load.reserved_tokens += c.tokens
            if self.policy.objective(c) == "latency":
                load.latency_calls += 1
            bound = self.policy.call_bound(c)
            if bound is not None:
                load.bounds.append(bound)
                load.requests_bound = min(load.requests_bound, bound)
            if self.keeps_prefixes:
                load.prefixes.update(c.prefix_keys)
            if c.uid in reject:
                self.release(c, i)
            else:
                self.running.append((c, i))
        return [(c.uid, i) for c, i in decisions]

    def release(self, c: CallInfo, i: int) -> None:
        load = self.loads[i]
        load.num_requests -= 1
        load.reserved_tokens -= c.tokens
        if self.policy.objective(c) == "latency":
            load.latency_calls -= 1
        bound = self.policy.call_bound(c)
        if bound is not None:
            load.bounds.remove(bound)
            load.requests_bound = min(load.bounds, default=1 << 30)
        self.policy.on_finish(c, i)


def trace(seed: int, reference: bool, tracked: bool, affinity: bool = False) -> list:
    """The decisions of one random run; ``affinity``: prefix affinity without ``dag_aware``,
    engines keeping the prefixes of the calls dispatched to them."""
    rr = random.Random(seed)
    cfg = config(rr)
    if affinity:
        room = random.Random(seed + 2).randint(4, 16)  # engines that take several calls
        cfg = cfg.model_copy(update={"ctx_aware": True, "dag_aware": False,
                                     "max_requests_per_engine": room})
    n = rr.randint(1, 7)
    limits = [(rr.choice([1 << 30, rr.randint(1, 8)]), rr.choice([1 << 60, rr.randint(400, 3000)]))
              for _ in range(n)]
    arrivals = calls(rr, rr.randint(1, 25))
    policy = ReferenceParrotScheduler(cfg) if reference else cfg.make(n)
    m = MiniManager(policy, n, limits, tracked, keeps_prefixes=affinity)
    events = random.Random(seed + 1)  # the same events for both policies
    out, step = [], 0
    while (arrivals or m.queue or m.running) and step < 400:
        reject = {c.uid for _, c in arrivals if events.random() < 0.05}
        while arrivals and arrivals[0][0] <= step:  # one consult per arrival, as the manager
            m.queue.append(arrivals.pop(0)[1])
            out.append((step, m.dispatch(float(step), reject)))
        for e in m.loads:  # prefix contexts appear and expire
            if events.random() < 0.2:
                key = events.choice(KEYS)
                if key in e.prefixes:
                    e.prefixes.discard(key)
                else:
                    e.prefixes.add(key)
        done = [r for r in m.running if events.random() < 0.3]
        for c, i in done:
            m.running.remove((c, i))
            m.release(c, i)
            if m.queue:
                out.append((step, "finish", m.dispatch(float(step), reject)))
        step += 1
    return out


@pytest.mark.parametrize("tracked", [True, False])
def test_same_decisions_as_the_reference(tracked: bool):
    placed = 0
    for seed in range(600):
        expected = trace(seed, True, tracked)
        placed += sum(len(d[-1]) for d in expected)
        assert trace(seed, False, tracked) == expected, seed
    assert placed > 3000


@pytest.mark.parametrize("tracked", [True, False])
def test_same_engines_found_by_prefix_as_the_reference(tracked: bool):
    placed = 0
    for seed in range(600):
        expected = trace(seed, True, tracked, affinity=True)
        placed += sum(len(d[-1]) for d in expected)
        assert trace(seed, False, tracked, affinity=True) == expected, seed
    assert placed > 3000
