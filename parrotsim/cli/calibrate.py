"""``parrotsim calibrate``: measure a GPU cost profile (CUDA machine), or fit one from raw data.

On a CUDA machine it times the calibration grids (``parrotsim.calibrate.measure``: linear part, paged,
shared-prefix and prefill attention, whole forward passes, fixed overheads), keeps the raw
measurements, fits the curves (``parrotsim.calibrate.fit``) and writes the profile with its held-out
forward passes beside it. ``--fit-from RAW_DIR`` skips the GPU and fits measurements made
earlier (``python -m parrotsim.calibrate.measure`` writes them; it needs torch but not this package's
other dependencies). Before measuring it checks the environment (``parrotsim.calibrate.preflight``:
the package's dependencies, torch, triton, a CUDA device with bf16) and stops with exit status 2
naming every problem at once.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from parrotsim.calibrate import fit, preflight
from parrotsim.calibrate import validate as val
from parrotsim.core.errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("calibrate", help="measure (GPU) or fit a cost profile",
                       description=__doc__)
    p.add_argument("--model", choices=["llama-7b", "llama-13b", "llama3-8b", "tiny"],
                   help="model shape to measure (required unless --fit-from)")
    p.add_argument("--out", type=Path, help="profile to write (default: ./<gpu>_<model>.yaml)")
    p.add_argument("--quick", action="store_true",
                   help="fewer grid points over the same extent (about half the time)")
    p.add_argument("--raw", type=Path, help="where to keep raw measurements "
                   "(default: <out>.raw/ beside the profile)")
    p.add_argument("--fit-from", type=Path, metavar="RAW_DIR",
                   help="fit measurements already made (no GPU needed)")
    p.add_argument("--sections", help="comma-separated measurement sections (default: all)")
    p.set_defaults(main=main)


def _slug(gpu: str) -> str:
    m = re.search(r"(H200|H100|A100|A6000|L40S|A10G?)", gpu)
    return (m.group(1) if m else re.sub(r"[^A-Za-z0-9]+", "-", gpu)).lower()


def main(args: argparse.Namespace) -> int:
    raw = args.fit_from
    if raw is None:
        if args.model is None:
            raise UsageError("calibrate: --model is required unless --fit-from is given")
        bad, found = preflight.problems()
        if bad:
            raise UsageError(f"calibrate: {preflight.message(bad)}; or fit measurements made "
                             "elsewhere with --fit-from RAW_DIR")
        print(f"environment: {found}", flush=True)
        from parrotsim.calibrate import measure  # imports torch: the gpu extra

        raw = args.raw or (args.out.with_suffix(".raw") if args.out else
                           Path(f"calibrate-{args.model}.raw"))
        argv = ["--model", args.model, "--out", str(raw)] + (["--quick"] if args.quick else [])
        if args.sections:
            argv += ["--sections", args.sections]
        measure.main(argv)
    if not (raw / "raw.csv").is_file() or not (raw / "env.json").is_file():
        raise UsageError(f"calibrate: {raw} has no raw.csv and env.json")
    env = json.loads((raw / "env.json").read_text())
    out = args.out or Path(f"{_slug(env.get('gpu', 'gpu'))}_{env['model']}.yaml")
    prof, points, _ = fit.build_profile(raw, out.name.removesuffix(".yaml"), out)
    fit.write_profile(prof, points, out)
    rows = val.evaluate(prof, points, "heldout")
    print(val.report(rows, val.summarize(rows)))
    print(f"wrote {out} and {val.points_path(out)} (raw measurements in {raw})")
    return 0
