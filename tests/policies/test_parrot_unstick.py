"""The stuck iteration's scans (policies/engine/parrot_unstick.py) against the formulas they
replace: ``min`` over the ready jobs of ``(*running, *waiting)``, and popping the end of that
list's KV holders sorted by key, on hand-built queues with equal keys, jobs not ready and
jobs without KV."""

import random
from types import SimpleNamespace

from parrotsim.policies.engine.parrot_admission import is_ready
from parrotsim.policies.engine.parrot_unstick import newest_holders, oldest_ready


def job(name: str, key: int, ctx: bool = True, waiting_inputs: int = 0,
        prefix_ready: bool | None = None) -> SimpleNamespace:
    prefix = None if prefix_ready is None else SimpleNamespace(ready=prefix_ready)
    return SimpleNamespace(name=name, k=(key,), ctx=object() if ctx else None,
                           waiting_inputs=waiting_inputs, prefix_ctx=prefix)


def key(s: SimpleNamespace) -> tuple:
    return s.k


def reference_oldest(running, waiting):
    cands = [s for s in (*running, *waiting) if is_ready(s)]
    return min(cands, key=key) if cands else None


def reference_victims(running, waiting, seq):
    victims = [s for s in (*running, *waiting) if s.ctx is not None and s is not seq]
    victims.sort(key=key)
    return [victims.pop() for _ in range(len(victims))]


def test_a_hand_built_queue():
    r = [job("r0", 1, ctx=False, waiting_inputs=1), job("r1", 2), job("r2", 4), job("r3", 4)]
    w = [job("w0", 0, ctx=False, prefix_ready=False), job("w1", 4), job("w2", 3),
         job("w3", 1, ctx=False, prefix_ready=True), job("w4", 5, ctx=False)]
    assert oldest_ready(r, w, key).name == "w3"  # r0 waits for inputs, w0 for its prefix
    assert oldest_ready(r[1:], [], key).name == "r1"
    assert oldest_ready([r[0]], [w[0]], key) is None
    # largest key first; on equal keys the waiting job, then the later running one
    assert [s.name for s in newest_holders(r, w, r[1], key)] == ["w1", "r3", "r2", "w2"]


def test_random_queues_with_equal_keys():
    rng = random.Random(7)
    for case in range(400):
        n, m = rng.randint(0, 8), rng.randint(0, 8)
        keys = [rng.randint(0, 5) for _ in range(n)]
        running = [job(f"r{i}", k, ctx=rng.random() < 0.8, waiting_inputs=rng.random() < 0.2,
                       prefix_ready=rng.choice([None, True, False]))
                   for i, k in enumerate(sorted(keys))]
        waiting = [job(f"w{i}", rng.randint(0, 5), ctx=rng.random() < 0.6,
                       waiting_inputs=rng.random() < 0.3,
                       prefix_ready=rng.choice([None, True, False])) for i in range(m)]
        assert oldest_ready(running, waiting, key) is reference_oldest(running, waiting), case
        everyone = running + waiting
        seq = rng.choice(everyone) if everyone else None
        got = list(newest_holders(running, waiting, seq, key))
        want = reference_victims(running, waiting, seq)
        assert [id(s) for s in got] == [id(s) for s in want], case
