"""``parrotsim validate``: a profile's error on its held-out forward passes (no GPU needed).

Reads the profile and ``<profile>.forward.csv`` beside it (written by ``parrotsim calibrate``),
composes each held-out batch with the cost model and prints per point, and by batch kind
(decode-only, prefill-only, mixed), the relative error against the measured time. Targets:
median |error| <= 3 %, worst <= 10 %. When the profile records the extent of its calibration
grids and some forward passes go past it (``--points`` from a larger grid), it says so once on
stderr and marks those rows (their errors are extrapolations). It writes nothing unless asked: ``--plot FILE`` writes a
predicted-vs-measured plot to FILE (its folders are created).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from parrotsim.calibrate import validate as val
from parrotsim.core.errors import UsageError
from parrotsim.sim.model.profile import load_profile, past_extent_message, shipped_profiles


def add_parser(sub) -> None:
    p = sub.add_parser("validate", help="held-out error of a calibrated profile",
                       description=__doc__)
    p.add_argument("profile", help="profile file or shipped profile name")
    p.add_argument("--points", type=Path, help="forward passes (default: beside the profile)")
    p.add_argument("--plot", type=Path, metavar="FILE",
                   help="write a predicted-vs-measured plot to FILE (default: no plot)")
    p.add_argument("--no-plot", action="store_true",
                   help="write no plot even with --plot (kept for old scripts)")
    p.add_argument("--all", action="store_true", help="training points too")
    p.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    p.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    path = Path(args.profile)
    if not path.suffix:
        path = shipped_profiles().get(args.profile, path)
    prof = load_profile(str(path))
    if args.plot and not args.no_plot:
        _check_plot_file(args.plot)
    points_file = args.points or val.points_path(path)
    try:
        points = val.read_points(points_file)
    except (val.PointsError, OSError) as exc:
        raise UsageError(str(exc)) from None
    rows = val.evaluate(prof, points, None if args.all else "heldout")
    if not rows:
        raise UsageError(f"{points_file}: split: no held-out forward passes (use --all for "
                         "the training points)")
    summary = val.summarize(rows)
    beyond = val.past_extent(rows)
    if beyond:  # once, before the table: these errors are extrapolations
        n = sum(1 for r in rows if r["beyond"])
        print(f"warning: {n} of {len(rows)} forward passes: {past_extent_message(prof, beyond)}",
              file=sys.stderr)
    print(f"{prof.name} ({prof.source}, {prof.gpu.name}, {prof.model.name}): "
          f"{'all' if args.all else 'held-out'} forward passes")
    print(val.report(rows, summary))
    met = (summary["all"]["median"] <= val.TARGET_MEDIAN
           and summary["all"]["worst"] <= val.TARGET_WORST)
    print(f"targets (median <= {100 * val.TARGET_MEDIAN:.0f} %, worst <= "
          f"{100 * val.TARGET_WORST:.0f} %): {'met' if met else 'MISSED'}")
    if args.plot and not args.no_plot:
        try:
            val.plot(rows, args.plot, f"{prof.name}: predicted vs measured")
        except OSError as exc:
            raise UsageError(f"{args.plot}: --plot: cannot write: {exc.strerror or exc}") \
                from None
        print(f"plot: {args.plot}")
    return 1 if args.strict and not met else 0


def _check_plot_file(path: Path) -> None:
    """``--plot FILE`` must name a file that can be made: not a folder, not below a file."""
    if path.is_dir():
        raise UsageError(f"{path}: --plot: is a folder; give a file name such as {path}/v.png")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{path}: --plot: {parent} is a file, not a folder")
            break
