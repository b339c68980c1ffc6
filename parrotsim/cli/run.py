"""``parrotsim run FILE.yaml``: expand an experiment file and run (or list) its runs.

Exit status: 0 all runs succeeded (or were cached), 1 some run failed or timed out (recorded
with its traceback in its run folder; the other runs still ran), 2 invalid file or options
(every error is printed as ``FILE:LINE:COL: field.path: message`` and nothing is written),
runs estimated to need more memory than ``--max-memory``, or an output folder that cannot be
written (read-only, or full: the sweep stops, the runs stored so far are kept whole).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from parrotsim.core.errors import memory_size, output_folder, seconds
from parrotsim.sim.harness.experiment import ExperimentError, load_experiment
from parrotsim.sim.harness.runner import DEFAULT_RUN_TIMEOUT, default_out, plan, run_experiment


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run", help="run an experiment file (sweep) into a results directory",
        description="Expand FILE's variants x sweep axes x seeds and run every run whose "
                    "results are not already stored under OUT/runs/.")
    p.add_argument("file", metavar="FILE.yaml", help="experiment file")
    p.add_argument("--out", metavar="DIR", type=output_folder, help="results directory "
                   "(default: results/<experiment name>)")
    p.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="local worker processes (default: all cores; 1 = in this process)")
    p.add_argument("--backend", choices=["local", "ray"], default="local")
    p.add_argument("--address", metavar="ADDR", help="Ray cluster to join (--backend ray)")
    p.add_argument("--force", action="store_true", help="re-run runs that are already stored")
    p.add_argument("--dry-run", action="store_true",
                   help="list the expanded runs and which are cached; run nothing")
    p.add_argument("--max-memory", type=memory_size, metavar="SIZE",
                   help="refuse (exit 2) when the runs in flight at once would need more memory "
                        "than SIZE by the estimate (e.g. 4G, 512M; none = no check; default: "
                        "80%% of the memory available)")
    p.add_argument("--run-timeout", type=seconds, default=DEFAULT_RUN_TIMEOUT, metavar="S",
                   help="stop a run after S wall-clock seconds and record it as failed "
                        f"(default: {DEFAULT_RUN_TIMEOUT:g}; 0 = no limit)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar (it is shown only when "
                   "stderr is a terminal)")
    p.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    try:
        exp = load_experiment(args.file)
    except ExperimentError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_out(exp)
    if args.dry_run:
        return _dry_run(exp, out, args.force, plan)
    frame = run_experiment(exp, out, jobs=args.jobs, backend=args.backend,
                           address=args.address, force=args.force, progress=not args.quiet,
                           run_timeout=args.run_timeout, max_memory=args.max_memory)
    failed = frame[frame["status"] != "ok"]
    print(f"{exp.name}: {len(frame)} runs, {len(failed)} failed ({frame.attrs['ran']} ran, "
          f"{frame.attrs['cached']} cached); summary in {out / 'summary.csv'}")
    for _, row in failed.iterrows():
        trace = out / "runs" / row["run_hash"] / "error.txt"
        see = f" (see {trace})" if trace.is_file() else " (not stored: retried next time)"
        print(f"  failed {row['run_hash']}: {row['error']}{see}", file=sys.stderr)
    return 1 if len(failed) else 0


def _dry_run(exp, out: Path, force: bool, plan) -> int:
    """Print one line per expanded run: key, cached or todo, labels."""
    runs, cached = plan(exp, out, force)
    print(f"{exp.name}: {len(runs)} runs, {len(cached)} cached in {out / 'runs'}")
    for run in runs:
        state = "cached" if run.key in cached else "todo"
        labels = "  ".join(f"{k}={v}" for k, v in run.labels.items())
        print(f"{run.key}  {state:<6}  {labels}")
    return 0
