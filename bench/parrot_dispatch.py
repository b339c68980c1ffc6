"""CPU time of Parrot's cluster scheduler inside a run: per dispatch and as a share of the run.

Runs ``bench/sim_scale.py``'s GPTs ``parrot`` variant (Fig 17's Parrot: client, prefix-affinity
scheduler, Parrot engines) ``--rounds`` times, each in a fresh process, with the scheduler's entry
points (``dispatch``, ``on_finish``, ``call_bound``, ``objective``; the last two are asked by the
manager too) wrapped to add up the process CPU time spent in them, and prints per round: calls
per entry point, CPU us per call of each, and their total against the run's CPU time. The
wrappers cost a fraction of a microsecond per call, counted in the figures; on a shared
machine compare the minimum over rounds, before and after a change, run back to back.

    python bench/parrot_dispatch.py [--engines 256] [--calls 4000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable

from sim_scale import gpts_config, run_one

from parrotsim.policies.cluster.parrot import ParrotScheduler

ENTRY_POINTS = ("dispatch", "on_finish", "call_bound", "objective")


def timed(method: Callable, tally: list[float]) -> Callable:
    """``method`` adding its CPU seconds to ``tally[0]`` and its calls to ``tally[1]``."""
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return method(*args, **kwargs)
        finally:
            tally[0] += time.process_time() - start
            tally[1] += 1
    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", type=int, default=256)
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # one round, here
    args = ap.parse_args()
    if not args.one:
        for r in range(args.rounds):
            print(f"round {r + 1}: ", end="", flush=True)
            subprocess.run([sys.executable, __file__, "--one", "--engines", str(args.engines),
                            "--calls", str(args.calls)], check=True)
        return
    tallies = {name: [0.0, 0] for name in ENTRY_POINTS}
    for name in ENTRY_POINTS:
        setattr(ParrotScheduler, name, timed(getattr(ParrotScheduler, name), tallies[name]))
    row = run_one(gpts_config(args.engines, args.calls, "parrot"))
    parts = " ".join(f"{name} {n} x {1e6 * cpu / max(n, 1):5.2f} us"
                     for name, (cpu, n) in tallies.items())
    total = sum(cpu for cpu, _ in tallies.values())
    print(f"{args.calls} GPTs calls on {args.engines} engines | {parts} | "
          f"scheduler {total:.3f} s of {row['cpu_s']:.3f} s cpu "
          f"({100 * total / row['cpu_s']:4.1f} %), {1e6 * total / row['calls']:5.1f} "
          f"us per call", flush=True)


if __name__ == "__main__":
    main()
