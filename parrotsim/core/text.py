"""Reading the user's text files (experiments, profiles, traces, forward-pass CSVs) as UTF-8.

A file that is not UTF-8 (saved as Latin-1 or UTF-16, a binary file under a text name) is a
bad input like any other: :func:`read_utf8` raises the caller's error type with the message
``PATH:LINE:COL: not UTF-8 text (byte 0xNN: reason); save the file as UTF-8``, where LINE and
COL (both from 1, the column counted in bytes) locate the first byte that does not decode,
instead of Python's ``UnicodeDecodeError`` with a byte offset and no file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from parrotsim.core.errors import UsageError


@dataclass(frozen=True)
class DecodeProblem:
    """Where the first undecodable byte of a file is (line and column from 1) and what it is."""

    line: int
    col: int
    message: str

    def at(self, path: str | Path) -> str:
        """The problem as ``PATH:LINE:COL: message``."""
        return f"{path}:{self.line}:{self.col}: {self.message}"


def locate(raw: bytes, exc: UnicodeDecodeError) -> DecodeProblem:
    """The position and description of decode error ``exc``, raised on all of ``raw``."""
    line = raw.count(b"\n", 0, exc.start) + 1
    col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
    bad = raw[exc.start:exc.end].hex(" ")
    return DecodeProblem(line, col, f"not UTF-8 text (byte {bad}: {exc.reason}); save the "
                                    "file as UTF-8")


def utf8_problem(raw: bytes, path: str | Path) -> str | None:
    """``PATH:LINE:COL: message`` for the first byte of ``raw`` that is not UTF-8, or None."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return locate(raw, exc).at(path)
    return None


def read_utf8(path: str | Path, error: type[Exception] = UsageError) -> str:
    """The text of ``path``; a file that is not UTF-8 raises ``error`` naming where (OS errors
    such as a missing file propagate as ``OSError``)."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(locate(raw, exc).at(path)) from None
