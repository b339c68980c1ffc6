"""Held-out validation of a profile: the composed cost model vs measured whole forward passes.

The measured forward passes live beside the profile in ``<profile>.forward.csv`` (one row per
batch: its prompt chunks, decodes, shared prefix, batch kind, ``train`` or ``heldout``, and the
measured seconds), so validation needs no GPU and no torch.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from parrotsim.calibrate.grids import describe_forward, parse_prefills
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.profile import Profile
from parrotsim.sim.model.sequence import Batch, Sequence

FIELDS = ["prefills", "decodes", "decode_ctx", "prefix", "kind", "split", "measured_s",
          "p20_s", "p80_s"]
KINDS = ("decode", "prefill", "mixed")
TARGET_MEDIAN, TARGET_WORST = 0.03, 0.10


def points_path(profile_path: Path) -> Path:
    """Where the forward passes of ``profile_path`` are stored."""
    return profile_path.with_name(profile_path.name.removesuffix(".yaml") + ".forward.csv")


def write_points(path: Path, points: list[dict]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(points)


def read_points(path: Path) -> list[dict]:
    """Forward passes from ``path`` (numbers converted)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no forward-pass measurements beside the profile")
    out = []
    with path.open() as f:
        for row in csv.DictReader(f):
            for k in ("decodes", "decode_ctx", "prefix"):
                row[k] = int(row[k] or 0)
            for k in ("measured_s", "p20_s", "p80_s"):
                row[k] = float(row[k]) if row.get(k) else float("nan")
            row["prefills"] = row.get("prefills") or ""
            out.append(row)
    return out


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
    """Per point: predicted and measured seconds and the relative error (``split`` None: all)."""
    cm = CostModel(profile, "none")
    rows = []
    for p in points:
        if split is not None and p["split"] != split:
            continue
        pred = predict(cm, p)
        rows.append({**p, "predicted_s": pred, "error": pred / p["measured_s"] - 1})
    return rows


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
                     f"{1e3 * r['predicted_s']:>12.3f} {100 * r['error']:>+7.2f}%")
    lines.append("")
    for kind, s in summary.items():
        lines.append(f"{kind:<8} n={s['n']:<3d} median |error| {100 * s['median']:5.2f} %   "
                     f"worst {100 * s['worst']:5.2f} %")
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
    vals = [1e3 * r[k] for r in rows for k in ("measured_s", "predicted_s")]
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
