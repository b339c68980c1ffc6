"""How fast can *any* CPython + SimPy model of the chat benchmark be? An upper bound.

This is not the simulator: it is the leanest model with the simulator's event structure and
nothing else, to show what the platform allows before any fidelity feature costs time.
Per call: one arrival event (least-queue counters in a heap, O(log engines) as the
simulator's; no client, no network draws, no records),
a cut of the running decode stretch at the step in progress (one new timer; the old one stays
in SimPy's heap and fires stale, as in ``sim/model/engine.py``), one prefill iteration, decode stretches
in closed form until the next finish. Costs are constants (20 ms per step plus 0.1 ms per
sequence and 0.1 us per KV token; 20 us per prompt token): no profile curves, no KV blocks,
no policy objects, no DataFrames.

    python bench/sim_floor.py [--requests 100000] [--engines 64] [--rate 100]

Prints calls/s and events/s of that skeleton, and the cost of one bare SimPy timeout event
(create, schedule, pop, run one callback) measured in a loop.
"""

from __future__ import annotations

import argparse
import heapq
import math
import time
from collections import deque

import numpy as np
import simpy

STEP_S, PER_SEQ_S, PER_KV_TOKEN_S, PER_PROMPT_TOKEN_S = 0.02, 1e-4, 1e-7, 2e-5


class Request:
    __slots__ = ("prompt", "output", "generated", "tokens")

    def __init__(self, prompt: int, output: int) -> None:
        self.prompt, self.output, self.generated, self.tokens = prompt, output, 0, 0


class SkeletonEngine:
    """vLLM-like engine: prefill-only iterations for arrivals, else one decode stretch."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.timer: simpy.Timeout | None = None
        self.mode = "idle"  # idle | prefill | decode
        self.start = self.first = self.growth = 0.0
        self.steps = 0
        self.batch: list[Request] = []
        self.finished = 0
        self._boundary = self.on_boundary

    def submit(self, req: Request) -> None:
        self.waiting.append(req)
        if self.mode == "decode":  # stop after the step in progress
            done = max(1, min(self.steps, math.ceil((self.env.now - self.start) / self.first)))
            if done < self.steps:
                self.steps = done
                self.wake(self.start + self.duration(done))
        elif self.mode == "idle":
            self.mode = "prefill"
            self.batch = []
            self.wake(self.env.now)

    def duration(self, steps: int) -> float:
        return steps * self.first + self.growth * (steps - 1) * steps / 2

    def wake(self, at: float) -> None:
        if self.timer is not None:
            self.timer.callbacks.clear()
        self.timer = self.env.timeout(at - self.env.now)
        self.timer.callbacks.append(self._boundary)

    def on_boundary(self, _event: simpy.Event) -> None:
        self.timer = None
        if self.mode == "prefill":
            for req in self.batch:
                req.generated = 1
        elif self.mode == "decode":
            done = []
            for req in self.running:
                req.generated += self.steps
                req.tokens += self.steps
                if req.generated >= req.output:
                    done.append(req)
            for req in done:
                self.running.remove(req)
            self.finished += len(done)
        self.next_iteration()

    def next_iteration(self) -> None:
        now = self.env.now
        if self.waiting:
            self.batch = list(self.waiting)
            self.waiting.clear()
            for req in self.batch:
                req.tokens = req.prompt
            self.running.extend(self.batch)
            self.mode = "prefill"
            self.wake(now + STEP_S + PER_PROMPT_TOKEN_S * sum(r.prompt for r in self.batch))
            return
        if not self.running:
            self.mode = "idle"
            return
        n = len(self.running)
        kv = sum(r.tokens for r in self.running)
        self.first = STEP_S + PER_SEQ_S * n + PER_KV_TOKEN_S * kv
        self.growth = PER_KV_TOKEN_S * n
        self.steps = min(r.output - r.generated for r in self.running)
        self.mode, self.start = "decode", now
        self.wake(now + self.duration(self.steps))


def skeleton(requests: int, engines: int, rate: float, seed: int = 0) -> tuple[float, int, int]:
    """Run the skeleton; returns (wall seconds, SimPy events, finished requests)."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / rate, requests)).tolist()
    reqs = [Request(int(p), int(o)) for p, o in zip(rng.integers(20, 1500, requests),
                                                       rng.integers(2, 600, requests), strict=True)]
    env = simpy.Environment()
    pool = [SkeletonEngine(env) for _ in range(engines)]
    counters = [(0, i) for i in range(engines)]  # a heap of (calls sent, engine), as LeastQueue

    def arrive(req: Request) -> None:
        sent, best = heapq.heappop(counters)
        heapq.heappush(counters, (sent + 1, best))
        pool[best].submit(req)

    for t, req in zip(arrivals, reqs, strict=True):
        env.timeout(t).callbacks.append(lambda _e, req=req: arrive(req))
    start = time.perf_counter()
    env.run()
    return time.perf_counter() - start, next(env._eid), sum(e.finished for e in pool)


def bare_event_us(n: int = 200_000) -> float:
    """Microseconds per SimPy timeout: created, scheduled, popped, one callback run."""
    env = simpy.Environment()

    def noop(_event: simpy.Event) -> None:
        pass

    def chain(_event: simpy.Event) -> None:
        env.timeout(1.0).callbacks.append(chain if next(left) else noop)

    left = iter(range(n, -1, -1))
    env.timeout(1.0).callbacks.append(chain)
    start = time.perf_counter()
    env.run()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--engines", type=int, default=64)
    ap.add_argument("--rate", type=float, default=100.0)
    args = ap.parse_args()
    wall, events, done = skeleton(args.requests, args.engines, args.rate)
    print(f"skeleton_{args.requests}_on_{args.engines}  calls={done:7d} events={events:8d} "
          f"wall={wall:6.2f}s  {done / wall:9.0f} calls/s  {events / wall:9.0f} events/s  "
          f"({events / done:.2f} events per call)")
    print(f"bare SimPy timeout event: {bare_event_us():.2f} us")


if __name__ == "__main__":
    main()
