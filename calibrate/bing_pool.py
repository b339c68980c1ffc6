"""The slot pool of the artifact's Bing microbenchmark (Figs 15/16) and what its printed latencies
say about each iteration.

ParrotServe's ``artifact/figure14`` script drove Parrot's runner without a scheduler: a pool of
B slots; each iteration runs every slot's job in one forward pass (a Fill of the request's
prompt, or its suffix when the shared prefix is forked, or one Generate); a request is done
after as many Generate iterations as its output, and freed slots are refilled FIFO before the
next iteration. Its first refill pushes request B-1 again (the loop variable of the first B
pushes is reused), so 65 requests run and the first 64 to finish are printed. Given the outputs,
that schedule is fixed, so each printed latency (push to completion, seconds) is a sum of known
iterations, and a model of an iteration's seconds can be fitted to them:
``seconds(i) = a + b * generates(i) + f * fill_tokens(i)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Schedule:
    """Per iteration: Generates and filled tokens; per request (in completion order): the
    iteration after which it was pushed and the one it finished in."""
    generates: list[int] = field(default_factory=list)
    fill_tokens: list[int] = field(default_factory=list)
    done: list[tuple[int, int, int]] = field(default_factory=list)  # (prompt, pushed, finished)


@dataclass
class _Job:
    prompt: int
    generates_left: int
    pushed: int  # the iteration after which it was pushed (0: before the first)
    filled: bool = False


def pool_schedule(fills: list[int], outputs: list[int], slots: int,
                  repush_last: bool) -> Schedule:
    """The script's slot pool: request p fills ``fills[p]`` tokens, then runs ``outputs[p]``
    Generate iterations. ``repush_last``: the script's first refill pushes request
    ``slots - 1`` again (the artifact); else requests go in order (the simulator). Runs until
    ``len(fills)`` requests have finished (all that finish in that last iteration count)."""
    n = len(fills)
    jobs: list[_Job | None] = [None] * slots
    sched = Schedule()

    def push(p: int, after: int) -> None:
        jobs[jobs.index(None)] = _Job(p, outputs[p], after)

    for p in range(min(slots, n)):
        push(p, 0)
    nxt = min(slots, n) - 1 if repush_last else min(slots, n)
    it = 0
    while len(sched.done) < n:
        it += 1
        sched.fill_tokens.append(sum(fills[j.prompt] for j in jobs if j and not j.filled))
        sched.generates.append(sum(1 for j in jobs if j and j.filled))
        for k, j in enumerate(jobs):
            if j is None:
                continue
            if not j.filled:  # the Fill ran this iteration; its Generates start next
                j.filled = True
                continue
            j.generates_left -= 1
            if j.generates_left <= 0:
                sched.done.append((j.prompt, j.pushed, it))
                jobs[k] = None
        for _ in range(min(jobs.count(None), n - nxt)):
            push(nxt, it)
            nxt += 1
    return sched


def fit(sched: Schedule, latencies: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares ``(a, b, f)`` (seconds, seconds per Generate, seconds per filled token) of
    the iteration model over the latencies of the schedule's first ``len(latencies)``
    completions (in completion order), and the relative error of each fitted latency."""
    feats = np.column_stack([np.ones(len(sched.generates)), sched.generates, sched.fill_tokens])
    cum = np.vstack([np.zeros(3), np.cumsum(feats, axis=0)])
    rows = np.array([cum[fin] - cum[push] for _, push, fin in sched.done[:len(latencies)]])
    y = np.asarray(latencies)
    coef = np.linalg.lstsq(rows, y, rcond=None)[0]
    return coef, rows @ coef / y - 1


__all__ = ["Schedule", "fit", "pool_schedule"]
