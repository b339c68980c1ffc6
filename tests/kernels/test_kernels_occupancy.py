"""The paged kernel's occupancy, read from its binary compiled for sm_90 off the GPU
(kernels/occupancy.py), and the shipped profiles that state it (curves.decode_paged_waves).

The folder runs under Triton's interpreter, which cannot compile for a GPU, so the tool runs
in a child process without ``TRITON_INTERPRET``."""

import functools
import json
import os
import subprocess
import sys

from parrotsim.sim.model.profile import load_profile, shipped_profiles


@functools.lru_cache
def occupancy(heads: int, kv_heads: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-m", "parrotsim.kernels.occupancy", "--heads",
                          str(heads), "--kv-heads", str(kv_heads), "--capability", "9.0"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_occupancy_is_read_from_the_compiled_kernel():
    """As many programs as the SM's registers, shared memory, threads and block slots hold
    together, and not one more."""
    occ = occupancy(32, 32)
    assert occ["capability"] == "9.0" and occ["warps"] >= 1
    threads = 32 * occ["warps"]
    for path in ("split", "direct"):
        regs, smem, fits = (occ[path][k] for k in ("regs", "smem", "programs_per_sm"))
        assert 0 < regs <= 255 and smem > 0 and fits >= 1

        def holds(n: int, regs: int = regs, smem: int = smem) -> bool:
            return (n * regs * threads <= 65536 and n * (smem + 1024) <= 233472
                    and n * threads <= 2048 and n <= 32)
        assert holds(fits) and not holds(fits + 1)


def test_shipped_profiles_state_the_kernels_occupancy():
    stated = [(name, load_profile(name)) for name in shipped_profiles()]
    stated = [(n, p) for n, p in stated if p.curves.decode_paged_waves is not None]
    assert {"h100_llama-7b", "h100_llama3-8b", "h100_llama-13b", "h200_llama-7b"} <= {
        n for n, _ in stated}
    for name, prof in stated:
        occ = occupancy(prof.model.heads, prof.model.kv_heads)
        assert prof.curves.decode_paged_waves.programs_per_sm == occ["split"]["programs_per_sm"], name
