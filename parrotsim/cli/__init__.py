"""The ``parrotsim`` command line: one subcommand per module of this package.

Exit status: 0 success, 1 a run or check failed, 2 bad input (the message names file, line and
field; nothing is written), 141 stdout was closed before everything was printed (``parrotsim
show DIR | head``: quietly, the status of a program stopped by SIGPIPE).
"""

from __future__ import annotations

import argparse
import os
import sys

from parrotsim import __version__
from parrotsim.cli import calibrate, replay, report, run, show, trace, validate, workloads
from parrotsim.core.errors import UsageError
from parrotsim.sim.model.profile import ProfileError
from parrotsim.workloads.app import AppError

COMMANDS = [run, show, trace, workloads, report, calibrate, validate, replay]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="parrotsim",
        description="Discrete-event simulator of LLM application serving (Parrot, OSDI'24).")
    parser.add_argument("--version", action="version", version=f"parrotsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.main(args) or 0)
    except (UsageError, ProfileError, AppError) as exc:
        print(f"parrotsim: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _discard_stdout()
        return 141


def _discard_stdout() -> None:
    """The reader of stdout went away: send what is still buffered to /dev/null at exit."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests capture it)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
