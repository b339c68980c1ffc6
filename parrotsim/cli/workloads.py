"""``parrotsim workloads list`` and ``parrotsim workloads describe NAME [--knob value ...]``.

Exit status: 0 on
success, 2 on an unknown workload, an unknown knob or a bad knob value (the message names it).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from parrotsim.workloads.catalog import WORKLOADS
from parrotsim.workloads.describe import KnobError, describe, knobs, list_workloads, parse_knobs
from parrotsim.workloads.traces import TraceError


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``workloads`` command (with ``list`` and ``describe``) to ``subparsers``."""
    parser = subparsers.add_parser("workloads", help="list workloads or describe one",
                                   description="List the workload generators or describe one.")
    sub = parser.add_subparsers(dest="workloads_command", required=True, metavar="ACTION")
    sub.add_parser("list", help="every workload with its figure and knobs")
    desc = sub.add_parser(
        "describe", help="statistics of one workload built with the given knobs",
        description="Build workload NAME with knobs (--chunk-size 1024, --files 16, lists as "
                    "0,1,2) and print its statistics. --seed N picks the random seed (default 0).")
    desc.add_argument("name", help="workload kind, see 'parrotsim workloads list'")
    desc.add_argument("knobs", nargs=argparse.REMAINDER, help="--knob value ...")
    parser.set_defaults(main=main)
    return parser


def _split_seed(argv: list[str]) -> tuple[int, list[str]]:
    """Take ``--seed N`` (or ``--seed=N``) out of the knob list."""
    seed, rest, i = 0, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--seed" or arg.startswith("--seed="):
            text = arg.partition("=")[2] if "=" in arg else (argv[i + 1] if i + 1 < len(argv)
                                                              else "")
            i += 1 if "=" in arg else 2
            try:
                seed = int(text)
            except ValueError:
                raise KnobError(f"--seed needs an integer, got {text!r}") from None
            continue
        rest.append(arg)
        i += 1
    return seed, rest


def main(args: argparse.Namespace | list[str]) -> int:
    """Run ``workloads list|describe``; ``args`` is the parsed namespace (or an argv list)."""
    if isinstance(args, list):
        parser = argparse.ArgumentParser(prog="parrotsim")
        add_parser(parser.add_subparsers(dest="command", required=True))
        args = parser.parse_args(["workloads", *args])
    if args.workloads_command == "list":
        for kind, figure, doc in list_workloads():
            print(f"{kind:<22} Fig {figure:<12} {doc}")
            print(f"{'':<22} knobs: {' '.join(knobs(WORKLOADS[kind])) or '-'}")
        return 0
    try:
        seed, rest = _split_seed(list(args.knobs))
        config = parse_knobs(args.name, rest)
        text = describe(config, seed)
    except (KnobError, TraceError) as exc:
        print(f"parrotsim workloads: {exc}", file=sys.stderr)
        return 2
    print(text)
    return 0
