"""What besides its config decides a run's result: the code that runs it and the files it reads.

Part of every run's cache key (:func:`parrotsim.sim.harness.store.run_key`), so that a cached result is reused
only when nothing that decides it changed. All hashes are SHA-256 (first 16 hex digits) over
file *bytes*, never over absolute paths or modification times, so a key is the same in every
process and on every machine that has the same code and inputs.

* :func:`source_hash`: the simulator's code and package data. It covers every ``*.py`` file of
  the packages :data:`PACKAGES` (``parrotsim.core``, ``.sim``, ``.policies``, ``.workloads``:
  everything a run imports; the harness is included too, so editing it also re-runs) and every
  file under their ``data/`` folders (``sim/model/data/*.csv``, ``workloads/data/*.csv``). Files are
  named by their path relative to the package, in sorted order; packages are found by
  their own ``__file__``. Not covered: ``kernels``, ``calibrate`` and ``reports``, which a run
  does not import (``calibrate`` only anchors the shipped profiles, which
  :func:`parrotsim.sim.model.profile.profile_hash` covers by content). Computed once per process.
* :func:`plugin_hashes`: the module file of each pluggable part of the config (workload, engine
  policy, cluster scheduler) whose class lives outside :data:`PACKAGES` (a user's plugin; only
  that file, not modules it imports in turn).
* :func:`input_hashes`: every input file the config names. A pluggable part declares its files
  with a method ``input_files() -> dict[field, path]`` (``kind: trace`` declares ``path``);
  the hash of each file's content is keyed by its dotted field (``workload.path``). Contents
  are cached by (path, size, modification and change time, inode), so a file is read once
  until it changes.
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import parrotsim.core
import parrotsim.policies
import parrotsim.sim
import parrotsim.workloads

PACKAGES: tuple[ModuleType, ...] = (parrotsim.core, parrotsim.sim, parrotsim.policies,
                                    parrotsim.workloads)
PARTS = ("workload", "cluster.engine", "cluster.scheduler")


class InputFileError(ValueError):
    """An input file named by a config that cannot be read; ``field`` is its dotted field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def source_files() -> list[tuple[str, Path]]:
    """``(relative name, path)`` of every file :func:`source_hash` covers, sorted by name."""
    files: list[tuple[str, Path]] = []
    for package in PACKAGES:
        root = Path(package.__file__).resolve().parent
        prefix = package.__name__.replace(".", "/")
        found = [p for p in root.rglob("*") if p.is_file() and (
            p.suffix == ".py" or "data" in p.relative_to(root).parts[:-1])]
        for path in found:
            rel = path.relative_to(root)
            if any(part.startswith((".", "__pycache__")) for part in rel.parts):
                continue
            files.append((f"{prefix}/{rel.as_posix()}", path))
    return sorted(set(files))


@cache
def source_hash() -> str:
    """Hash of the simulator's source and package data (see module docstring); per process."""
    h = hashlib.sha256()
    for name, path in source_files():
        h.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def _parts(config: Any) -> dict[str, Any]:
    """The pluggable parts of a :class:`parrotsim.sim.harness.config.RunConfig`, by dotted field."""
    out = {}
    for dotted in PARTS:
        part = config
        for attr in dotted.split("."):
            part = getattr(part, attr)
        out[dotted] = part
    return out


@cache
def _roots() -> tuple[Path, ...]:
    return tuple(Path(p.__file__).resolve().parent for p in PACKAGES)


@cache
def _in_packages(file: str) -> bool:
    path = Path(file).resolve()
    return any(path.is_relative_to(root) for root in _roots())


def plugin_hashes(config: Any) -> dict[str, str]:
    """Content hash of the plugin module file each of a config's parts comes from, keyed by
    the part's dotted field (not by module name, which depends on where the file lies)."""
    out: dict[str, str] = {}
    for dotted, part in _parts(config).items():
        module = sys.modules.get(type(part).__module__)
        file = getattr(module, "__file__", None)
        if file and not _in_packages(file):
            out[dotted] = file_hash(file)
    return out


def file_hash(path: str | os.PathLike[str]) -> str:
    """Content hash of one file, re-read only when its size, times or inode change."""
    resolved = Path(path).resolve()
    st = resolved.stat()
    return _file_hash(str(resolved), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@cache
def _file_hash(path: str, size: int, mtime_ns: int, ctime_ns: int, inode: int) -> str:
    return _digest(Path(path).read_bytes())


def input_hashes(config: Any) -> dict[str, str]:
    """Content hash of every input file the config names, keyed by dotted field."""
    out: dict[str, str] = {}
    for dotted, part in _parts(config).items():
        declare = getattr(part, "input_files", None)
        for name, path in (declare() if callable(declare) else {}).items():
            field = f"{dotted}.{name}"
            try:
                out[field] = file_hash(path)
            except OSError as exc:
                raise InputFileError(field, f"cannot read input file {path}: "
                                     f"{exc.strerror or exc}") from None
    return out
