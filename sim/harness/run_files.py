"""Checksums of a stored run's files: recorded when they are written, checked before reuse.

A run directory is published whole (:mod:`parrotsim.sim.harness.store`), but a file in it can
still be damaged later (a disk or copy error, a truncated sync, a tool rewriting it), and a
cached run whose ``calls.parquet`` no longer reads must not be used. ``summary.json`` therefore
lists every other file of the run under ``files``: its size in bytes and the SHA-256 of its
content (first 16 hex digits), both taken from the bytes as they are written, so writing reads
nothing back. :func:`intact` checks them before a run is taken from the cache: the sizes first
(one ``stat`` per file), then the hashes (one read per file; SHA-256 runs at about 1.6 GB/s
here, and a run's files are typically tens of kB, so a cached run costs well under a
millisecond). A run recorded without ``files`` (an older parrotsim) is not trusted either.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any


def digest(data: bytes) -> str:
    """The checksum stored for a file's content."""
    return hashlib.sha256(data).hexdigest()[:16]


class FileWriter:
    """Writes the files of one run into ``folder`` and records each one's size and checksum
    (:attr:`files`: name -> ``{"bytes": size, "sha256": checksum}``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files: dict[str, dict[str, Any]] = {}

    def write(self, name: str, data: bytes | str) -> None:
        """Write ``data`` (text as UTF-8) to ``folder/name`` and record it."""
        raw = data.encode() if isinstance(data, str) else data
        (self.folder / name).write_bytes(raw)
        self.files[name] = {"bytes": len(raw), "sha256": digest(raw)}


def intact(folder: Path, files: Any) -> bool:
    """Whether every file ``files`` lists is in ``folder`` with its recorded size and
    checksum (False for a missing or malformed list)."""
    if not isinstance(files, dict) or not files:
        return False
    try:
        for name, meta in files.items():
            if (folder / name).stat().st_size != meta["bytes"]:
                return False
        return all(digest((folder / name).read_bytes()) == meta["sha256"]
                   for name, meta in files.items())
    except (OSError, TypeError, KeyError):
        return False
