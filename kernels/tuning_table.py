"""Per-GPU table of tuned decode-attention choices (split count and tile by shape).

The table is a CSV written by :mod:`parrotsim.kernels.tune` on the GPU and kept beside the
calibration profiles as ``calibrate/profiles/<gpu>_kernels.csv`` (``<gpu>`` = the device name
without "NVIDIA", lower case, spaces as dashes: ``h200``), or named by the environment variable
``PARROTSIM_KERNEL_TABLE``. One row per measured grid point:

* ``kernel=paged``: G (query heads per KV head), batch, context (KV tokens, the table width) ->
  ``splits, block_n, warps, stages`` of the paged split-KV kernel;
* ``kernel=shared``: G, batch, context (= shared prefix tokens), suffix -> ``mode`` (``paged``:
  the paged kernel over the shared pages is faster; ``fused`` / ``concurrent``: cascade modes),
  ``prefix_splits`` (prefix split count, 0 = heuristic), ``prefix_bm`` (0 = heuristic), ``splits`` (suffix
  splits, 0 = heuristic), ``block_n, warps, stages`` (the suffix phase's tile; empty or 0 = the
  mode's default).

``us`` is the chosen candidate's time, ``fallback_us`` the untuned heuristic's at the same point.
A query takes the row of the same G (else the nearest G) nearest in log2 batch and log2 context
(and log2(suffix + 16) for shared rows). Without a table the callers keep their heuristics.
Pure Python (no torch), so it loads and is tested anywhere.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROFILES_DIR = Path(__file__).resolve().parent.parent / "calibrate" / "profiles"
ENV_VAR = "PARROTSIM_KERNEL_TABLE"
FIELDS = ["kernel", "G", "batch", "context", "suffix", "splits", "block_n", "warps", "stages",
          "mode", "prefix_splits", "prefix_bm", "us", "fallback_us", "candidates"]
PAGED_DEFAULT = (64, 4, 3)  # block_n, warps, stages: the measured G=1 default (NOTES.md)


@dataclass(frozen=True)
class PagedChoice:
    """Split count and tile of the paged decode kernel."""
    splits: int
    block_n: int = PAGED_DEFAULT[0]
    warps: int = PAGED_DEFAULT[1]
    stages: int = PAGED_DEFAULT[2]


@dataclass(frozen=True)
class SharedChoice:
    """How to run a shared-prefix batch: ``mode`` "paged" (fall back to the paged kernel over
    the shared pages) or a cascade mode; 0 in an integer field = the kernel's heuristic."""
    mode: str
    prefix_splits: int = 0
    prefix_bm: int = 0
    suffix_splits: int = 0
    #: the suffix phase's (tokens a tile, warps, stages); None: the mode's default
    suffix_tile: tuple[int, int, int] | None = None


def gpu_slug(device_name: str) -> str:
    """``"NVIDIA H200"`` -> ``"h200"`` (the profile files' GPU names)."""
    name = device_name.lower().replace("nvidia", "").strip()
    return "-".join(name.split())


def table_path(device_name: str) -> Path:
    """Where the table of ``device_name`` lives (``$PARROTSIM_KERNEL_TABLE`` wins)."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else PROFILES_DIR / f"{gpu_slug(device_name)}_kernels.csv"


def _dist(a: float, b: float) -> float:
    return (math.log2(max(a, 1)) - math.log2(max(b, 1))) ** 2


class KernelTable:
    """Rows of one tuning table, queried by shape."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    @classmethod
    def load(cls, path: Path) -> KernelTable:
        """Read a table CSV (columns :data:`FIELDS`; empty cells allowed)."""
        with open(path, newline="") as f:
            return cls(list(csv.DictReader(f)))

    def _nearest(self, kernel: str, g: int, key) -> dict | None:
        rows = [r for r in self.rows if r["kernel"] == kernel]
        if not rows:
            return None
        best_g = min({int(r["G"]) for r in rows}, key=lambda x: (_dist(x, g), x))
        return min((r for r in rows if int(r["G"]) == best_g), key=key)

    def paged(self, g: int, batch: int, context: int) -> PagedChoice | None:
        """Tuned paged-kernel choice nearest to (G, batch, context), or None."""
        r = self._nearest("paged", g, lambda r: _dist(int(r["batch"]), batch)
                          + _dist(int(r["context"]), context))
        if r is None:
            return None
        return PagedChoice(int(r["splits"]), int(r["block_n"]), int(r["warps"]), int(r["stages"]))

    def shared(self, g: int, batch: int, prefix: int, suffix: int) -> SharedChoice | None:
        """Tuned shared-prefix choice nearest to (G, batch, prefix, suffix), or None."""
        r = self._nearest("shared", g, lambda r: _dist(int(r["batch"]), batch)
                          + _dist(int(r["context"]), prefix)
                          + _dist(int(r["suffix"]) + 16, suffix + 16))
        if r is None:
            return None
        tile = tuple(int(r.get(k) or 0) for k in ("block_n", "warps", "stages"))
        return SharedChoice(r["mode"], int(r["prefix_splits"] or 0), int(r["prefix_bm"] or 0),
                            int(r["splits"] or 0), tile if all(tile) else None)


@cache
def _load_cached(path: str, mtime: float) -> KernelTable | None:
    try:
        return KernelTable.load(Path(path))
    except (OSError, KeyError, ValueError, csv.Error):
        return None


def table_for(device_name: str) -> KernelTable | None:
    """The table of ``device_name`` if one exists and reads (re-read when the file changes)."""
    path = table_path(device_name)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None
    return _load_cached(str(path), mtime)


def write_table(path: Path, rows: list[dict]) -> None:
    """Write ``rows`` (dicts over :data:`FIELDS`) as a table CSV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
