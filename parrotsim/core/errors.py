"""The error type for bad user input (command-line flags, files, names), and the check of an
output folder argument.

The command line prints a :class:`UsageError` to stderr as ``parrotsim: MESSAGE`` and exits with
status 2, having written nothing; messages name the file, line and field where they can.
"""

from __future__ import annotations

from argparse import ArgumentTypeError
from pathlib import Path


class UsageError(Exception):
    """Bad input: printed to stderr, exit status 2."""


def output_folder(value: str) -> Path:
    """An ``--out`` argument: a folder that may not exist yet, never an existing file or a
    path below one (argparse reports the error with exit status 2)."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise ArgumentTypeError(f"{path} exists and is not a folder")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ArgumentTypeError(f"{parent} is a file, so {path} cannot be a folder")
            break
    return path
