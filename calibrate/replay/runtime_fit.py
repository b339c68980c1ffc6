"""The replay loop's host costs, measured from its iteration logs, as a profile's runtime terms.

    python -m parrotsim.calibrate.replay.runtime_fit REAL_DIR [REAL_DIR ...]
        [--profile h200_llama-7b] [--out calibrate/profiles/h200_llama-7b-replay.yaml]

The cost profile of a GPU times the kernels alone (CUDA graphs, no host work). A real loop
also spends host time every iteration, and its eager prompt iterations are launch-bound. From
the ``iterations`` tables of replayed runs (:mod:`parrotsim.calibrate.replay.tables`) this
measures, as medians over all iterations of the given runs:

* ``overhead_per_seq_s``: how the host time of a decode-only iteration (a CUDA-graph replay:
  wall time plus the bookkeeping after it, minus its GPU time, ``wall_s + post_s - gpu_s``)
  grows with the sequences in the batch: the least-squares slope (input building, page tables
  and emission are per sequence; 9-20 us per sequence on the H200's host);
* ``overhead_s``: the median of that host time less the per-sequence part;
* ``prefill_overhead_s``: the same for an iteration that fills prompt tokens (run eagerly);
* ``prefill_launch_floor_s``: the host time of issuing an eager iteration's kernel launches
  (``launch_s``): the GPU cannot finish such an iteration sooner.

``scale`` and ``prefill_scale`` stay 1: the GPU time is the profile's; the base profile's
``decode_launch_s`` and ``group_launch_s`` (measured by :mod:`.launch_bench`) are kept. The same terms go to
the ``vllm`` and ``parrot`` runtimes (one loop runs both policies), or with ``--runtime NAME``
to that engine policy's runtime only, the base profile's other runtimes kept (to fit one
policy's host costs on its own runs). The written profile is the base profile with these
runtimes, a new name, and the runs it was fitted to.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.sim.model.profile import Profile, dump_profile, load_profile
from parrotsim.sim.model.profile_parts import Runtime


def host_terms(iterations: pd.DataFrame) -> Runtime:
    """The runtime terms measured on one pooled iteration log (see module docstring)."""
    it = iterations[iterations["gpu_s"].notna()]
    prefill = it["prefill_seqs"] > 0
    host = (it["wall_s"] + it["post_s"] - it["gpu_s"]).to_numpy(float)
    if not prefill.any() or prefill.all():
        raise ValueError("the runs need both decode-only and prompt-filling iterations")
    seqs = (it["prefill_seqs"] + it["decode_seqs"]).to_numpy(float)
    dec = ~prefill.to_numpy()
    per_seq = 0.0
    if np.ptp(seqs[dec]) > 0:
        per_seq = max(0.0, float(np.polyfit(seqs[dec], host[dec], 1)[0]))
    rest = host - per_seq * seqs
    return Runtime(overhead_s=max(0.0, float(np.median(rest[dec]))),
                   prefill_overhead_s=max(0.0, float(np.median(rest[~dec]))),
                   prefill_launch_floor_s=float(it.loc[prefill, "launch_s"].median()),
                   overhead_per_seq_s=per_seq)


def kept_launch_terms(rt: Runtime, base: Profile, name: str) -> Runtime:
    """``rt`` with the base profile's launch terms that the iteration logs do not measure
    (``decode_launch_s``, ``group_launch_s``: :mod:`.launch_bench` measures them)."""
    if name not in base.runtimes:
        return rt
    old = base.runtimes[name]
    return rt.model_copy(update={"decode_launch_s": old.decode_launch_s,
                                 "group_launch_s": old.group_launch_s})


def run_dirs(paths: list[Path]) -> list[Path]:
    """Every replayed run under ``paths`` (a run folder, or a replay's output folder)."""
    out = []
    for p in paths:
        found = [p] if (p / "iterations.parquet").is_file() else sorted(
            d for d in (p / "runs").glob("*") if (d / "iterations.parquet").is_file())
        if not found:
            raise SystemExit(f"{p}: no replayed run (iterations.parquet) found")
        out += found
    return out


def fitted_profile(real_dirs: list[Path], base: Profile, name: str,
                   runtimes: list[str] | None = None) -> tuple[Profile, Runtime, int]:
    """``base`` with the host terms measured on every run under ``real_dirs`` written into
    ``runtimes`` (default: vllm and parrot; given: those only, the base's others kept), the
    base's launch terms kept; with the measured terms and the iterations they pool."""
    runs = run_dirs(real_dirs)
    pooled = pd.concat([pd.read_parquet(d / "iterations.parquet") for d in runs])
    rt = host_terms(pooled)
    names = runtimes or ["vllm", "parrot"]
    which = "" if not runtimes else f" ({', '.join(names)} runtime)"
    sources = [f"{d.parent.parent.name}/{d.name}" for d in runs]
    prof = base.model_copy(update={
        "name": name,
        "runtimes": {**(base.runtimes if runtimes else {}),
                     **{n: kept_launch_terms(rt, base, n) for n in names}},
        "description": (f"{base.name} with the host costs of parrotsim's replay loop "
                        f"(calibrate/replay) measured on the same GPU{which}: "
                        + ", ".join(sources)),
        "fitted_to": [*base.fitted_to, f"runtime terms{which}: {len(pooled)} replayed "
                      "iterations"]})
    return prof, rt, len(pooled)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parrotsim.calibrate.replay.runtime_fit",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("real_dirs", type=Path, nargs="+")
    ap.add_argument("--profile", default="h200_llama-7b", help="base profile (name or path)")
    ap.add_argument("--out", type=Path, help="write the profile here (default: print only)")
    ap.add_argument("--runtime", action="append", help="write the terms into this runtime "
                    "only (repeatable; default: vllm and parrot), keeping the base's others")
    args = ap.parse_args(argv)
    name = args.out.stem if args.out is not None else "fitted"
    prof, rt, n = fitted_profile(args.real_dirs, load_profile(args.profile), name, args.runtime)
    print(f"{len(run_dirs(args.real_dirs))} runs, {n} iterations: decode host "
          f"{rt.overhead_s * 1e3:.3f} ms, prefill host {rt.prefill_overhead_s * 1e3:.3f} ms, + "
          f"{rt.overhead_per_seq_s * 1e6:.1f} us per sequence, prefill launch floor "
          f"{rt.prefill_launch_floor_s * 1e3:.2f} ms")
    if args.out is None:
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    dump_profile(prof, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
