"""How many programs of the paged decode kernel one multiprocessor runs at once (no GPU needed).

The cost model's skewed-batch excess (``curves.decode_paged_waves``,
:mod:`parrotsim.sim.model.paged_waves`) needs two facts: the GPU's multiprocessor count and the
paged kernel's occupancy, the programs per SM that its registers, shared memory and threads
allow. The second is a property of the kernel as Triton compiles it for the GPU's compute
capability, so it is read from the compiled binary (Triton's compiler, then ``cuobjdump
-res-usage`` from Triton's own NVIDIA backend), on any machine::

    python -m parrotsim.kernels.occupancy --heads 32 --kv-heads 8 [--capability 9.0]

The calibration (:mod:`parrotsim.calibrate.measure`) records it in ``env.json`` beside the SM
count, and the fit writes both into the profile.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from parrotsim.kernels import paged_decode
from parrotsim.kernels._common import PAGE_SIZE
from parrotsim.kernels.paged_decode import choose_config

#: per-SM limits by compute capability (CUDA programming guide, "Compute Capabilities" table):
#: 32-bit registers, shared memory bytes usable by blocks, resident threads and blocks
SM_LIMITS: dict[tuple[int, int], dict[str, int]] = {
    (8, 0): {"regs": 65536, "smem": 167936, "threads": 2048, "blocks": 32},
    (8, 6): {"regs": 65536, "smem": 102400, "threads": 1536, "blocks": 16},
    (8, 9): {"regs": 65536, "smem": 102400, "threads": 1536, "blocks": 24},
    (9, 0): {"regs": 65536, "smem": 233472, "threads": 2048, "blocks": 32},
}
#: shared memory the driver reserves per resident block (bytes)
BLOCK_RESERVED_SMEM = 1024
_POINTERS = dict(q_ptr="*bf16", k_ptr="*bf16", v_ptr="*bf16", bt_ptr="*i32", lens_ptr="*i32",
                 pre_ptr="*i32", po_ptr="*fp32", plse_ptr="*fp32", out_ptr="*bf16",
                 lse_ptr="*fp32")


def paged_occupancy(kv_heads: int, heads: int, head_dim: int, capability: tuple[int, int],
                    limits: dict[str, int] | None = None) -> dict[str, object]:
    """Registers per thread, shared memory per program and programs per SM of the paged
    kernel compiled for ``capability`` with its default tile (the one the calibration runs
    without a tuning table), for the split path (partial states) and the direct path (one
    split). ``limits``: the SM's, default :data:`SM_LIMITS` of the capability."""
    limits = limits or SM_LIMITS[capability]
    fn = paged_decode._decode_kernel
    g = heads // kv_heads
    cfg = choose_config(64, kv_heads, g, 2048, torch.device("cpu"))
    const = dict(G=g, BLOCK_H=max(16, triton.next_power_of_2(g)), BLOCK_N=cfg.block_n,
                 D=head_dim, PAGE=PAGE_SIZE, F32=False, MERGE=False, PDL=False, PREFIX=False)
    out: dict[str, object] = {"capability": f"{capability[0]}.{capability[1]}",
                              "triton": triton.__version__, "warps": cfg.warps,
                              "stages": cfg.stages, "block_n": cfg.block_n}
    for path, direct in (("split", False), ("direct", True)):
        c = {**const, "DIRECT": direct}
        sig = {a: _POINTERS.get(a, "constexpr" if a in c else "fp32" if a == "qk_scale" else "i32")
               for a in fn.arg_names}
        src = ASTSource(fn, sig, constexprs={(fn.arg_names.index(a),): v for a, v in c.items()})
        target = GPUTarget("cuda", capability[0] * 10 + capability[1], 32)
        kernel = triton.compile(src, target=target,
                                options=dict(num_warps=cfg.warps, num_stages=cfg.stages))
        regs, static = cubin_resources(kernel.asm["cubin"])
        smem = kernel.metadata.shared + static
        per_warp = -(-regs * 32 // 256) * 256  # registers are allocated 256 per warp
        fits = min(limits["regs"] // (per_warp * cfg.warps),
                   limits["smem"] // max(smem + BLOCK_RESERVED_SMEM, 1),
                   limits["threads"] // (32 * cfg.warps), limits["blocks"])
        out[path] = {"regs": regs, "smem": smem, "programs_per_sm": fits}
    return out


def cubin_resources(cubin: bytes) -> tuple[int, int]:
    """(registers per thread, static shared bytes) of a cubin, by ``cuobjdump -res-usage``."""
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([str(tool), "-res-usage", f.name], capture_output=True,
                              text=True, check=True).stdout
    regs = re.search(r"REG:(\d+)", text)
    shared = re.search(r"SHARED:(\d+)", text)
    return int(regs.group(1)) if regs else 0, int(shared.group(1)) if shared else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parrotsim.kernels.occupancy",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=32)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--capability", default="9.0", choices=[f"{a}.{b}" for a, b in SM_LIMITS])
    args = ap.parse_args(argv)
    cap = tuple(int(x) for x in args.capability.split("."))
    print(json.dumps(paged_occupancy(args.kv_heads, args.heads, args.head_dim, cap)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
