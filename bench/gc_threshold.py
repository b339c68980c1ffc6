"""A/B of the young-generation GC threshold a run sets (``simulation.GC_YOUNG_THRESHOLD``).

    python bench/gc_threshold.py [--rounds 3] [--thresholds 50000,1000000]

Runs, alternating the thresholds in one process, GPTs Parrot (4,000 calls on 256 engines) and
50,000 chats on 1,024 engines (``bench/sim_scale.py``'s configurations) and prints the CPU time
of ``simulate()`` plus a ``gc.collect()`` of the run's garbage: a run leaves a cyclic object
graph that some collection must free, inside the run (frequent young collections), when the
thresholds are restored, or later, so only the sum compares the settings fairly.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_scale import chat_config, gpts_config  # noqa: E402

from parrotsim.sim.harness import simulation  # noqa: E402
from parrotsim.sim.harness.config import RunConfig  # noqa: E402

CASES = {"gpts parrot 4000 on 256": lambda: gpts_config(256, 4000, "parrot"),
         "chat 50000 on 1024": lambda: chat_config(1024, 50_000)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--thresholds", default="50000,1000000")
    args = ap.parse_args()
    thresholds = [int(t) for t in args.thresholds.split(",")]
    for name, make in CASES.items():
        cfg = RunConfig.model_validate(make())
        for rnd in range(args.rounds):
            for threshold in thresholds:
                simulation.GC_YOUNG_THRESHOLD = threshold
                gc.collect()
                start = time.process_time()
                result = simulation.simulate(cfg)
                del result
                gc.collect()
                print(f"{name:24s} round {rnd}  threshold {threshold:>9,d}  "
                      f"{time.process_time() - start:6.3f} s CPU", flush=True)


if __name__ == "__main__":
    main()
