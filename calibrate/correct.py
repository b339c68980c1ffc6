"""Step 5 of the fit: corrections from the training forward passes (see :mod:`parrotsim.calibrate.fit`).

The composed kernel curves miss what only a whole forward pass has (embedding, rotary and
KV-cache writes, final norm and LM head, kernels running back to back with warm caches). A
weighted least-squares fit of the relative residual on a fixed overhead, a cost per token, a
cost per decode and scales of the two attention curves takes that up; a coefficient out of
its bounds is pinned there and the rest refitted. The per-token cost may not take away more
than half of the measured linear curve's cost per token at any point (a correction as large
as the GEMMs themselves is no missing forward-pass component; it appears when the training
passes cannot tell the per-token cost from the prefill-attention scale, as with --quick's
forward set, where -21 us/token zeroed the linear curve).
"""

from __future__ import annotations

import numpy as np

from parrotsim.calibrate import validate as val
from parrotsim.calibrate.grids import parse_prefills
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.profile import Profile
from parrotsim.sim.model.profile_parts import Curve

SCALE_BOUNDS = (0.5, 2.0)


def prefill_work(new: float, ctx: float, chunks: float = 1) -> float:
    """The cost model's prefill-attention work of ``chunks`` chunks of ``new`` over ``ctx``."""
    return chunks * new * (ctx + (new + 1) / 2)


def _components(cm: CostModel, p: dict) -> list[float]:
    """[1, tokens, decodes, prefill attention, paged attention] of a forward point under the
    cost model's curves."""
    chunks = parse_prefills(p["prefills"])
    tokens = sum(n for n, _ in chunks) + p["decodes"]
    nd = p["decodes"]
    kv = nd * (p["decode_ctx"] + 1 - p["prefix"]) if nd else 0
    pa = cm.prefill_attention_time(chunks) if chunks else 0.0
    pg = cm.paged_time(nd, kv) if nd else 0.0
    return [1.0, float(tokens), float(nd), pa, pg]


def correct(profile: Profile, train: list[dict]) -> tuple[Profile, dict[str, float]]:
    """Fit overhead, per-token, per-decode and attention-scale corrections on ``train``."""
    cm = CostModel(profile, "none")
    x = np.array([_components(cm, p) for p in train])
    meas = np.array([p["measured_s"] for p in train])
    base = np.array([val.predict(cm, p) for p in train])
    names = ["overhead_s", "per_token_s", "per_decode_s", "prefill_scale", "paged_scale"]
    lin = profile.curves.linear
    token_floor = -0.5 * min(s / xv for xv, s in zip(lin.x, lin.seconds, strict=True) if xv >= 1)
    fixed: dict[int, float] = {}
    for _ in range(len(names)):
        free = [j for j in range(len(names)) if j not in fixed]
        rhs = meas - base - sum(x[:, j] * v for j, v in fixed.items())
        w = 1 / meas
        coef, *_ = np.linalg.lstsq(x[:, free] * w[:, None], rhs * w, rcond=None)
        sol = dict(zip(free, coef, strict=True)) | fixed
        bad = {0: sol[0] < 0, 1: sol[1] < token_floor,
               2: sol[2] + profile.curves.decode_per_seq_s < 0,
               3: not SCALE_BOUNDS[0] <= 1 + sol[3] <= SCALE_BOUNDS[1],
               4: not SCALE_BOUNDS[0] <= 1 + sol[4] <= SCALE_BOUNDS[1]}
        newly = [j for j, b in bad.items() if b and j not in fixed]
        if not newly:
            break
        for j in newly:
            fixed[j] = {0: 0.0, 1: token_floor, 2: -profile.curves.decode_per_seq_s}.get(
                j, float(np.clip(1 + sol[j], *SCALE_BOUNDS) - 1))
    coef = {n: float(sol[j]) for j, n in enumerate(names)}
    c = profile.curves
    lin = [max(0.0, s + coef["per_token_s"] * xv) for xv, s in zip(c.linear.x, c.linear.seconds,
                                                                   strict=True)]
    curves = c.model_copy(update={
        "iteration_overhead_s": coef["overhead_s"],
        "decode_per_seq_s": max(0.0, c.decode_per_seq_s + coef["per_decode_s"]),
        "linear": Curve(x=c.linear.x, seconds=lin),
        "prefill_attention": Curve(x=c.prefill_attention.x, seconds=[
            s * (1 + coef["prefill_scale"]) for s in c.prefill_attention.seconds]),
        "prefill_attention_grid": None if c.prefill_attention_grid is None else
        c.prefill_attention_grid.model_copy(update={"seconds": [
            [s * (1 + coef["prefill_scale"]) for s in row]
            for row in c.prefill_attention_grid.seconds]}),
        "decode_paged": Curve(x=c.decode_paged.x, seconds=[
            s * (1 + coef["paged_scale"]) for s in c.decode_paged.seconds]),
        "decode_paged_grid": None if c.decode_paged_grid is None else
        c.decode_paged_grid.model_copy(update={"seconds": [
            [s * (1 + coef["paged_scale"]) for s in row] for row in c.decode_paged_grid.seconds]}),
    })
    return profile.model_copy(update={"curves": curves}), coef
