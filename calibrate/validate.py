"""Held-out validation of a profile: the composed cost model vs measured whole forward passes.

The measured forward passes live beside the profile in ``<profile>.forward.csv`` (one row per
batch: its prompt chunks, decodes, shared prefix, batch kind, ``train`` or ``heldout``, and the
measured seconds), so validation needs no GPU and no torch.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from parrotsim.calibrate.grids import describe_forward, parse_prefills
from parrotsim.core.text import read_utf8
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.profile import Profile
from parrotsim.sim.model.sequence import Batch, Sequence

FIELDS = ["prefills", "decodes", "decode_ctx", "prefix", "kind", "split", "measured_s",
          "p20_s", "p80_s"]
KINDS = ("decode", "prefill", "mixed")
SPLITS = ("train", "heldout")
TARGET_MEDIAN, TARGET_WORST = 0.03, 0.10


def points_path(profile_path: Path) -> Path:
    """Where the forward passes of ``profile_path`` are stored."""
    return profile_path.with_name(profile_path.name.removesuffix(".yaml") + ".forward.csv")


def write_points(path: Path, points: list[dict]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(points)


class PointsError(ValueError):
    """A forward-pass file that cannot be used; the message is ``PATH[:LINE]: column: problem``
    (lines from 1, the header being line 1)."""


REQUIRED = FIELDS[:7]


def read_points(path: Path) -> list[dict]:
    """Forward passes from ``path`` (numbers converted); raises :class:`PointsError` for a
    missing file, a missing column, a short row, a number that does not parse, a measured time
    that is not a positive finite number, or an unknown batch kind or split."""
    if not path.is_file():
        raise PointsError(f"{path}: no forward-pass measurements beside the profile")
    text = read_utf8(path, PointsError)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise PointsError(f"{path}:1: {', '.join(missing)}: missing column (header: "
                          f"{', '.join(header) or 'none'})")
    out = []
    for row in reader:
        where = f"{path}:{reader.line_num}"
        if None in row or any(row[c] is None for c in REQUIRED):
            raise PointsError(f"{where}: row: {_count_fields(row)} fields, the header has "
                              f"{len(header)}")
        out.append(_point(row, where))
    return out


def _count_fields(row: dict) -> int:
    """The fields a CSV row had (DictReader pads a short row with None, keeps extras at None)."""
    return sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or [])


def _point(row: dict, where: str) -> dict:
    """One forward pass with its numbers converted and checked."""
    for k in ("decodes", "decode_ctx", "prefix"):
        try:
            row[k] = int(row.get(k) or 0)
        except ValueError:
            raise PointsError(f"{where}: {k}: not an integer: {row[k]!r}") from None
        if row[k] < 0:
            raise PointsError(f"{where}: {k}: must be >= 0, not {row[k]}")
    for k in ("measured_s", "p20_s", "p80_s"):
        try:
            row[k] = float(row[k]) if row.get(k) else float("nan")
        except ValueError:
            raise PointsError(f"{where}: {k}: not a number: {row[k]!r}") from None
    if not (math.isfinite(row["measured_s"]) and row["measured_s"] > 0):
        raise PointsError(f"{where}: measured_s: must be a positive finite time in seconds, "
                          f"not {row['measured_s']}")
    row["prefills"] = row.get("prefills") or ""
    try:
        chunks = parse_prefills(row["prefills"])
    except ValueError:
        raise PointsError(f"{where}: prefills: not a list like 512@0;128@1024: "
                          f"{row['prefills']!r}") from None
    if any(n < 1 or c < 0 for n, c in chunks) or not (chunks or row["decodes"]):
        raise PointsError(f"{where}: prefills: a batch needs prefill chunks of >= 1 token or "
                          f"decodes: {row['prefills']!r} with {row['decodes']} decodes")
    if row["kind"] not in KINDS:
        raise PointsError(f"{where}: kind: {row['kind']!r} is not one of {', '.join(KINDS)}")
    if row["split"] not in SPLITS:
        raise PointsError(f"{where}: split: {row['split']!r} is not one of {', '.join(SPLITS)}")
    return row


def point_batch(p: dict) -> tuple[Batch, list[tuple[int, int]], int]:
    """The simulator's batch for a forward point, its shared-prefix groups and shared tokens."""
    batch = Batch()
    for i, (n, ctx) in enumerate(parse_prefills(p["prefills"])):
        batch.prefills.append((Sequence(i, "cal", "prefill", n + ctx, 1, cached_len=n + ctx), n))
    for i in range(int(p["decodes"])):
        # a decode reads its cached tokens plus the new one
        batch.decodes.append(Sequence(1000 + i, "cal", "decode", int(p["decode_ctx"]), 1,
                                      cached_len=int(p["decode_ctx"]) + 1))
    pre = int(p.get("prefix") or 0)
    if pre and batch.decodes:
        return batch, [(pre, len(batch.decodes))], pre * len(batch.decodes)
    return batch, [], 0


def predict(cm: CostModel, p: dict) -> float:
    """Seconds the composed model gives for forward point ``p`` (kernel time, no runtime)."""
    batch, shared, shared_tokens = point_batch(p)
    return cm.iteration_time(batch, shared or None, shared_tokens)


def evaluate(profile: Profile, points: list[dict], split: str | None = "heldout") -> list[dict]:
    """Per point: predicted and measured seconds, the relative error (``split`` None: all)
    and ``beyond``: the axes of the profile's measured extent the point went past (empty for a
    profile that records no extent)."""
    rows = []
    for p in points:
        if split is not None and p["split"] != split:
            continue
        cm = CostModel(profile, "none")  # one per point: its extent notes are the point's own
        pred = predict(cm, p)
        rows.append({**p, "predicted_s": pred, "error": pred / p["measured_s"] - 1,
                     "beyond": dict(cm.beyond)})
    return rows


def past_extent(rows: list[dict]) -> dict[str, float]:
    """Per axis of the extent, the largest query past it over ``rows`` (empty: none)."""
    out: dict[str, float] = {}
    for r in rows:
        for axis, value in r.get("beyond", {}).items():
            out[axis] = max(value, out.get(axis, 0))
    return out


def summarize(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Median and worst absolute relative error, overall and per batch kind."""
    out = {}
    for kind in ("all", *KINDS):
        errs = [abs(r["error"]) for r in rows if kind == "all" or r["kind"] == kind]
        if errs:
            out[kind] = {"n": len(errs), "median": float(np.median(errs)),
                         "worst": float(np.max(errs))}
    return out


def report(rows: list[dict], summary: dict) -> str:
    """A per-point table and the summary, as text."""
    lines = [f"{'batch':<52} {'kind':<8} {'measured ms':>11} {'predicted ms':>12} {'error':>8}"]
    for r in rows:
        lines.append(f"{describe_forward(r):<52} {r['kind']:<8} {1e3 * r['measured_s']:>11.3f} "
                     f"{1e3 * r['predicted_s']:>12.3f} {100 * r['error']:>+7.2f}%"
                     + ("  * past the measured extent" if r.get("beyond") else ""))
    lines.append("")
    for kind, s in summary.items():
        lines.append(f"{kind:<8} n={s['n']:<3d} median |error| {100 * s['median']:5.2f} %   "
                     f"worst {100 * s['worst']:5.2f} %")
    inside = [r for r in rows if not r.get("beyond")]
    if 0 < len(inside) < len(rows):
        s = summarize(inside)["all"]
        lines.append(f"{'inside':<8} n={s['n']:<3d} median |error| {100 * s['median']:5.2f} %   "
                     f"worst {100 * s['worst']:5.2f} %   (points within the measured extent)")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path, title: str) -> None:
    """Predicted vs measured (log-log), coloured by batch kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    for kind, colour in zip(KINDS, ("tab:blue", "tab:orange", "tab:green"), strict=True):
        sel = [r for r in rows if r["kind"] == kind]
        if sel:
            ax.scatter([1e3 * r["measured_s"] for r in sel], [1e3 * r["predicted_s"] for r in sel],
                       label=kind, color=colour, s=18)
    vals = [v for v in (1e3 * r[k] for r in rows for k in ("measured_s", "predicted_s"))
            if math.isfinite(v) and v > 0] or [1.0]  # log axes: positive finite limits only
    lo, hi = min(vals) * 0.8, max(vals) * 1.25
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.fill_between([lo, hi], [lo * 0.9, hi * 0.9], [lo * 1.1, hi * 1.1], color="0.9")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured (ms)",
           ylabel="predicted (ms)", title=title)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
