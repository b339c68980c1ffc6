"""Decode attention at any shape list (``python -m parrotsim.kernels.bench --shapes SPEC``).

A shape is (G, B, P, S, ragged): G query heads per KV head (Hq = 32, D = 128, so Hkv = 32/G),
B sequences, each of P prefix tokens and S suffix tokens (ragged: suffix b drawn uniformly from
0..2S, seeded). Per shape, CUDA-graph replays with the L2 flushed, median of ``reps``:

* ``paged_us``: the paged kernel on private pages (contexts P + S_b) with the tuned choice
  (:mod:`parrotsim.kernels.tuning_table`; the heuristic without a table), ``paged_untuned_us``
  with the heuristic, ``sdpa_us``: torch SDPA over the same K/V viewed as one contiguous
  [B, Hkv, P+S, D] gather (uniform shapes only; the G query heads of a KV head are its rows);
* ``shared_us``: the shared-prefix kernel, mode "auto" (may be the paged fallback: see
  ``shared_choice``), ``cascade_us``: the cascade with the untuned heuristic mode,
  ``paged_shared_us``: the paged kernel over the shared prefix pages (a partial last prefix page
  private per sequence).

Floors: bytes / the best streaming bandwidth measured in the same run (``bw_TBs``): the paged
kernel reads every context (B*(P+S) tokens), the shared kernel the prefix once (P + sum S_b).
``paged_read_us`` / ``shared_read_us`` time a plain streaming read of exactly those bytes (one
launch, no attention; empty past :data:`~parrotsim.kernels.bench_util.READ_MAX`): at small
sizes it falls short of the floor too (launch, ramp and tail), so a kernel can be held to no
better than ``*_read_pct_floor``. :func:`summary` counts issue 18's targets against both.
"""

from __future__ import annotations

import csv
import statistics
import time
from functools import partial
from itertools import product
from pathlib import Path

import torch
import torch.nn.functional as F

from parrotsim.kernels.bench_cases import private_batch, shared_batch, tok_bytes
from parrotsim.kernels.bench_util import READ_MAX, CsvLog, RandomKV, Reader
from parrotsim.kernels.paged_decode import choose_config, choose_num_splits
from parrotsim.kernels.paged_decode import paged_decode_attention as paged
from parrotsim.kernels.shared_prefix_decode import choose_shared, shared_prefix_decode_attention

HQ, D = 32, 128
DEFAULT_SPEC = "1,4,8x1,7,48,100,200x500,3000,12000x0,17,1000"
FIELDS = ["G", "B", "P", "S", "ragged", "bw_TBs", "paged_floor_us", "paged_us",
          "paged_pct_floor", "paged_choice", "paged_untuned_us", "sdpa_us", "sdpa_over_paged",
          "shared_floor_us", "shared_us", "shared_pct_floor", "shared_choice", "cascade_us",
          "paged_shared_us", "speedup_vs_paged_shared", "paged_read_us", "paged_read_pct_floor",
          "shared_read_us", "shared_read_pct_floor", "error"]
MAX_BYTES = 80e9  # private K+V of one shape; larger shapes are reported as skipped


def parse_shapes(spec: str) -> list[tuple[int, int, int, int, bool]]:
    """``"G x B x P x S[r]"`` groups separated by ``;``, each field a comma list (products
    taken; a trailing ``r`` makes the group ragged), ``"default"`` (the issue-18 table), or a
    CSV file with columns G, B, P, S and optionally ragged (0/1)."""
    if spec == "default":
        spec = DEFAULT_SPEC
    if Path(spec).is_file():
        return _read_shapes(Path(spec))
    shapes = []
    for group in filter(None, (g.strip() for g in spec.split(";"))):
        ragged = group.endswith("r")
        fields = group.rstrip("r").split("x")
        if len(fields) != 4:
            raise ValueError(f"shape {group!r}: want G x B x P x S")
        gs, bs, ps, ss = ([int(v) for v in f.split(",")] for f in fields)
        # G fastest, so a sweep cut by its time budget still covers every group size
        shapes += [(g, b, p, s, ragged) for s, p, b, g in product(ss, ps, bs, gs)]
    for shape in shapes:
        _check(shape, f"shape {shape[:4]}")
    return shapes


def _check(shape: tuple, where: str) -> None:
    g, b, p, s, _ = shape
    if g < 1 or HQ % g:
        raise ValueError(f"{where}: G: {g} does not divide the {HQ} query heads")
    if b < 1 or p < 0 or s < 0 or p + s < 1:
        raise ValueError(f"{where}: B >= 1, P >= 0, S >= 0 and P + S >= 1 required")


def _read_shapes(path: Path) -> list[tuple[int, int, int, int, bool]]:
    """Shapes from a CSV (G, B, P, S, optional ragged); errors name ``PATH:LINE: field``."""
    shapes = []
    with open(path, newline="") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            vals = []
            for field in ("G", "B", "P", "S"):
                try:
                    vals.append(int(r.get(field) or ""))
                except ValueError:
                    raise ValueError(f"{path}:{line}: {field}: not an integer: "
                                     f"{r.get(field)!r}") from None
            shapes.append((*vals, (r.get("ragged") or "0").strip() in ("1", "true", "True")))
            _check(shapes[-1], f"{path}:{line}")
    return shapes


def suffixes(b: int, s: int, ragged: bool, seed: int) -> list[int]:
    """Suffix lengths: S each, or uniform in 0..2S (seeded) when ragged."""
    if not ragged or s == 0:
        return [s] * b
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2 * s + 1, (b,), generator=gen).tolist()


def _sdpa(pb, lens: list[int], g: int):
    k, v = pb.contiguous()
    n = lens[0]
    q = pb.q.view(pb.q.shape[0], -1, g, pb.q.shape[2])
    return partial(F.scaled_dot_product_attention, q, k[:, :, :n], v[:, :, :n])


def measure_shape(timer, kv: RandomKV, shape: tuple, bw: float, reps: int, hq: int = HQ,
                  d: int = D, reader: Reader | None = None) -> dict:
    """Every column of :data:`FIELDS` for one shape (``bw`` in TB/s; the read columns only
    with a ``reader``)."""
    g, b, p, s, ragged = shape
    suf = suffixes(b, s, ragged, seed=hash(shape) & 0xFFFF)
    lens = [p + x for x in suf]
    tb = tok_bytes(hq // g, d)
    qo = 2 * b * hq * d * 2
    nbytes = {"paged": sum(lens) * tb + qo, "shared": (p + sum(suf)) * tb + qo}
    row = {"G": g, "B": b, "P": p, "S": s, "ragged": int(ragged), "bw_TBs": bw,
           **{f"{kind}_floor_us": n / bw / 1e6 for kind, n in nbytes.items()}}
    if b * max(lens) * tb > MAX_BYTES:
        return {**row, "error": "skipped: private K/V over 80 GB"}
    if reader is not None:
        for kind, n in nbytes.items():
            op = reader.op(n)
            if op is not None:
                row[f"{kind}_read_us"] = timer(op, reps=reps)
                row[f"{kind}_read_pct_floor"] = 100 * row[f"{kind}_floor_us"] / row[f"{kind}_read_us"]
    pb = private_batch(kv, lens, hq, g, d)
    cfg = choose_config(b, hq // g, g, pb.tables.shape[1] * 16, kv.device)
    row["paged_choice"] = f"{cfg.splits}s/{cfg.block_n}x{cfg.warps}w{cfg.stages}"
    row["paged_us"] = timer(partial(paged, pb.q, pb.k, pb.v, pb.tables, pb.lens), reps=reps)
    heur = choose_num_splits(b * hq // g, pb.tables.shape[1] * 16, kv.device)
    row["paged_untuned_us"] = timer(partial(paged, pb.q, pb.k, pb.v, pb.tables, pb.lens,
                                            num_splits=heur), reps=reps)
    if not ragged:
        row["sdpa_us"] = timer(_sdpa(pb, lens, g), reps=reps)
        row["sdpa_over_paged"] = row["sdpa_us"] / row["paged_us"]
    del pb
    sb = shared_batch(kv, p, suf, hq, g, d)
    ch = choose_shared(b, g, p, sb.suffix_tables.shape[1] * 16, kv.device)
    row["shared_choice"] = ch.mode + (f"/{ch.prefix_splits}psplits" if ch.prefix_splits else "")
    row["shared_us"] = timer(partial(shared_prefix_decode_attention, *sb.args()), reps=reps)
    mode = "fused" if b * g <= 32 else "concurrent"
    row["cascade_us"] = timer(partial(shared_prefix_decode_attention, *sb.args(), mode=mode),
                              reps=reps)
    row["paged_shared_us"] = timer(partial(paged, sb.q, sb.k, sb.v, *sb.paged_tables()),
                                   reps=reps)
    row["speedup_vs_paged_shared"] = row["paged_shared_us"] / row["shared_us"]
    row["paged_pct_floor"] = 100 * row["paged_floor_us"] / row["paged_us"]
    row["shared_pct_floor"] = 100 * row["shared_floor_us"] / row["shared_us"]
    return row


def run(out: Path, timer, dev: torch.device, shapes: list[tuple], bw: float, budget_s: float,
        reps: int = 10, hq: int = HQ, d: int = D) -> dict:
    """Measure ``shapes`` in order into the CSV ``out`` until ``budget_s`` runs out."""
    t0, log, kv = time.time(), CsvLog(out, FIELDS), RandomKV(dev)
    reader = Reader(dev, READ_MAX if dev.type == "cuda" else 1 << 20)
    done = 0
    for shape in shapes:
        if time.time() - t0 > budget_s:
            print(f"shapes: budget {budget_s:.0f}s reached after {done} shapes", flush=True)
            break
        try:
            log.add(**measure_shape(timer, kv, shape, bw, reps, hq, d, reader))
        except Exception as e:  # noqa: BLE001 - one shape failing (memory) must not stop the sweep
            g, b, p, s, r = shape
            log.add(G=g, B=b, P=p, S=s, ragged=int(r), error=f"{type(e).__name__}: {e}"[:200])
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        done += 1
    return {"shapes": done, "planned": len(shapes)}


def _num(row: dict, key: str) -> float | None:
    v = row.get(key)
    return None if v in (None, "") else float(v)


def summary(rows: list[dict]) -> str:
    """Issue 18's kernel targets over measured rows (dicts as :data:`FIELDS`, numbers or CSV
    strings): the paged kernel at >= 90 % of its bytes floor for B >= 32, per G, each miss put
    down to the read (a plain read of the same bytes is under 90 % too) or to the kernel; torch
    SDPA faster than the paged kernel; the shared-prefix kernel at B=64, P=6000, S=256 (>= 50 %
    of its floor, >= 5x over the paged kernel over shared pages); and where it is slower than
    that paged kernel."""
    ok = [r for r in rows if not r.get("error") and _num(r, "paged_us")]
    lines = []
    for g in sorted({int(_num(r, "G")) for r in ok}):
        big = [r for r in ok if int(_num(r, "G")) == g and _num(r, "B") >= 32]
        miss = [r for r in big if _num(r, "paged_pct_floor") < 90]
        unread = [r for r in miss if _num(r, "paged_read_pct_floor") is None]
        by_read = [r for r in miss if r not in unread and _num(r, "paged_read_pct_floor") < 90]
        lines.append(f"paged >= 90 % of floor at B >= 32, G={g}: {len(big) - len(miss)} of "
                     f"{len(big)}; of the {len(miss)} misses a plain read of the same bytes is "
                     f"under 90 % too on {len(by_read)}, not timed on {len(unread)}")
    ratios = sorted(_num(r, "sdpa_over_paged") for r in ok if _num(r, "sdpa_over_paged"))
    faster = [x for x in ratios if x < 1]
    if ratios:
        lines.append(f"torch SDPA faster than paged on {len(faster)} of {len(ratios)} shapes"
                     + (f" (SDPA time / paged time: median {statistics.median(faster):.3f}, "
                        f"lowest {faster[0]:.3f})" if faster else ""))
    for r in ok:
        if (_num(r, "B"), _num(r, "P"), _num(r, "S")) == (64, 6000, 256):
            read = _num(r, "shared_read_pct_floor")
            lines.append(f"shared-prefix at B=64, P=6000, S=256, G={int(_num(r, 'G'))}: "
                         f"{_num(r, 'shared_pct_floor'):.1f} % of floor (a plain read: "
                         f"{'-' if read is None else f'{read:.1f} %'}), "
                         f"{_num(r, 'speedup_vs_paged_shared'):.2f}x over paged-over-shared")
    slower = [r for r in ok if _num(r, "shared_us") and _num(r, "paged_shared_us")
              and _num(r, "shared_us") > _num(r, "paged_shared_us")]
    lines.append(f"shared-prefix slower than paged-over-shared on {len(slower)} of {len(ok)} "
                 f"shapes, by more than 10 % on "
                 f"{sum(_num(r, 'shared_us') > 1.1 * _num(r, 'paged_shared_us') for r in slower)}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    with open(sys.argv[1], newline="") as f:
        print(summary(list(csv.DictReader(f))))
