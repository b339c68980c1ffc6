"""The error type for bad user input (command-line flags, files, names), and the checks of an
output folder argument and of a size argument.

The command line prints a :class:`UsageError` to stderr as ``parrotsim: MESSAGE`` and exits with
status 2, having written nothing; messages name the file, line and field where they can.
"""

from __future__ import annotations

import math
import re
from argparse import ArgumentTypeError
from pathlib import Path

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)


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


def memory_size(value: str) -> float:
    """A ``--max-memory`` argument: bytes, or a number with K, M, G or T (powers of 1024;
    ``4G``, ``512MiB``, ``1.5GB``), or ``none`` for no limit (``inf``)."""
    if value.strip().lower() in ("none", "inf", "unlimited"):
        return math.inf
    m = _SIZE.match(value)
    if m is None:
        raise ArgumentTypeError(f"{value!r} is not a size like 4G, 512M or 1.5GiB (or none)")
    size = float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ")
    if size <= 0:
        raise ArgumentTypeError(f"{value!r}: the limit must be more than 0 bytes")
    return size


def seconds(value: str) -> float | None:
    """A ``--run-timeout`` argument: positive seconds, or ``0``/``none`` for no limit."""
    if value.strip().lower() in ("none", "0", "inf"):
        return None
    try:
        number = float(value)
    except ValueError:
        raise ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(number) or number <= 0:
        raise ArgumentTypeError(f"{value!r}: give a positive number of seconds (0: no limit)")
    return number
