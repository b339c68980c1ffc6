"""``parrotsim replay`` (a CUDA GPU) and ``parrotsim compare`` (no GPU): the simulator held to a
real serving loop.

``replay EXPERIMENT --out DIR`` runs the experiment's workload through the real executor of
``calibrate/replay`` (the simulator's own engine policy and KV semantics, the project's LLaMA
forward pass) and writes the simulator's per-call, per-app and per-engine tables plus an
iteration log; ``compare REAL_DIR`` simulates the same runs and prints the per-request and
per-iteration errors (``calibrate/replay/README.md``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from parrotsim.calibrate.replay import __main__ as replay_main
from parrotsim.calibrate.replay import compare as compare_mod
from parrotsim.core.errors import UsageError, output_folder
from parrotsim.core.text import read_utf8


def add_parser(sub) -> None:
    p = sub.add_parser("replay", help="replay an experiment on a real GPU (CUDA)",
                       description=__doc__.splitlines()[0])
    p.add_argument("experiment", help="experiment file or shipped name (replay/sharegpt_vllm)")
    p.add_argument("--out", required=True, type=output_folder,
                   help="folder for the replayed tables")
    p.add_argument("--eager", action="store_true", help="no CUDA graphs for decode steps")
    p.add_argument("--num-requests", type=int, help="override workload.num_requests")
    p.set_defaults(main=replay)
    c = sub.add_parser("compare", help="simulated vs replayed: per-request errors (no GPU)",
                       description="Simulate the runs of a replay folder and print the errors.")
    c.add_argument("real_dir", help="output folder of 'parrotsim replay'")
    c.add_argument("--profile", help="cost profile to simulate with (default: the run's)")
    c.add_argument("--out", type=output_folder,
                   help="where compare.csv and the plot go (default: REAL_DIR)")
    c.add_argument("--bounds", help="bounds file: exit 1 when a run breaks one (the CI gate "
                   "on committed replays; e.g. REAL_DIR/bounds.yaml)")
    c.add_argument("--host-from", nargs="+", metavar="DIR",
                   help="replays of another workload on the same lease: measure the host "
                   "terms on them and simulate with those (written to OUT/host_profile.yaml)")
    c.set_defaults(main=compare)


def replay(args: argparse.Namespace) -> int:
    argv = [args.experiment, "--out", str(args.out)] + (["--eager"] if args.eager else [])
    if args.num_requests is not None:
        argv += ["--num-requests", str(args.num_requests)]
    return replay_main.main(argv)


def compare(args: argparse.Namespace) -> int:
    _check_replay_folder(Path(args.real_dir))
    argv = [args.real_dir] + (["--profile", args.profile] if args.profile else [])
    argv += ["--bounds", args.bounds] if args.bounds else []
    for other in args.host_from or ():
        _check_replay_folder(Path(other))
    argv += ["--host-from", *args.host_from] if args.host_from else []
    return compare_mod.main(argv + (["--out", str(args.out)] if args.out else []))


def _check_replay_folder(real: Path) -> None:
    """A folder written by ``parrotsim replay``: ``runs/`` holding run folders whose
    ``meta.json`` reads as a run description (raises :class:`UsageError` naming the file)."""
    runs = real / "runs"
    if not runs.is_dir():
        raise UsageError(f"{real}: no runs/ folder here; give the --out folder of "
                         "'parrotsim replay'")
    metas = sorted(p / "meta.json" for p in runs.iterdir() if (p / "meta.json").is_file())
    if not metas:
        raise UsageError(f"{runs}: no replayed run (a folder with meta.json) here")
    for meta in metas:
        try:
            data = json.loads(read_utf8(meta))
            data["config"]["workload"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{meta}: not a replayed run's description ({exc})") from None
