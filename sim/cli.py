"""The ``parrotsim`` command line: one subcommand per module in ``sim/commands``.

Exit status: 0 success, 1 a run or check failed, 2 bad input (the message names file, line and
field; nothing is written).
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = ["run", "show", "workloads", "bench", "report", "calibrate", "validate"]


class UsageError(Exception):
    """Bad input: printed to stderr, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="parrotsim",
        description="Discrete-event simulator of LLM application serving (Parrot, OSDI'24).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"sim.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"sim.commands.{name}":
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from sim.profile import ProfileError
    from workloads.app import AppError

    try:
        return int(args.main(args) or 0)
    except (UsageError, ProfileError, AppError) as exc:
        print(f"parrotsim: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
