"""An analytic roofline cost profile from GPU and model specs, for hardware never profiled.

Each curve is the larger of a memory time (bytes over bandwidth x efficiency) and a compute
time (FLOPs over peak x efficiency):

* linear layers: read all weights once; 2 FLOPs per parameter per token;
* paged decode attention: read every KV token of every sequence;
* shared-prefix attention: read the prefix's KV once; 4 FLOPs per head dim, per query head,
  per layer, per sequence and prefix token;
* prefill attention: 4 FLOPs per head dim, per query head, per layer and per token pair
  (causal work = new * (context + new/2)).

The efficiencies are knobs: the interim paper-hardware profiles (``*-interim.yaml``, kept for
comparison with the shipped profiles projected from H200 measurements) are this model with knobs
fitted to the paper's calibration facts (``calibrate/interim.py``).
"""

from __future__ import annotations

from pydantic import Field

from parrotsim.core.config import StrictConfig
from parrotsim.sim.model.profile import SCHEMA_VERSION, Profile
from parrotsim.sim.model.profile_parts import Curve, Curves, GpuSpec, Grid2D, ModelSpec, Runtime

GPUS: dict[str, GpuSpec] = {
    "a100-80gb": GpuSpec(name="NVIDIA A100-SXM 80GB", memory_gib=80, hbm_tb_s=2.04,
                         bf16_tflops=312),
    "a6000": GpuSpec(name="NVIDIA RTX A6000", memory_gib=48, hbm_tb_s=0.768, bf16_tflops=155),
    "h200": GpuSpec(name="NVIDIA H200", memory_gib=141, hbm_tb_s=4.8, bf16_tflops=989),
}
MODELS: dict[str, ModelSpec] = {
    "llama-7b": ModelSpec(name="llama-7b", layers=32, hidden=4096, heads=32, kv_heads=32,
                          head_dim=128, intermediate=11008, vocab=32000, params=6.74e9),
    "llama-13b": ModelSpec(name="llama-13b", layers=40, hidden=5120, heads=40, kv_heads=40,
                           head_dim=128, intermediate=13824, vocab=32000, params=13.0e9),
    # grouped-query attention (8 KV heads for 32 query heads, G = 4), as most current models
    "llama3-8b": ModelSpec(name="llama3-8b", layers=32, hidden=4096, heads=32, kv_heads=8,
                           head_dim=128, intermediate=14336, vocab=128256, params=8.03e9),
}
TOKEN_GRID = [1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072,
              4096, 6144, 8192, 12288, 16384, 32768]
KV_GRID = [0, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
PREFIX_GRID = [0, 1024, 2048, 4096, 8192, 16384, 65536]
BATCH_GRID = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
WORK_GRID = [0, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10]


class RooflineKnobs(StrictConfig):
    """Achieved fractions of peak, and fixed costs (seconds)."""

    linear_bw_eff: float = Field(default=0.85, gt=0, le=1)
    linear_flops_eff: float = Field(default=0.7, gt=0, le=1)
    attn_bw_eff: float = Field(default=0.6, gt=0, le=1)
    attn_flops_eff: float = Field(default=0.4, gt=0, le=1)
    iteration_overhead_s: float = Field(default=0.002, ge=0)
    decode_per_seq_s: float = Field(default=0.0, ge=0)


def roofline_profile(gpu: GpuSpec, model: ModelSpec, knobs: RooflineKnobs | None = None,
                     name: str = "", runtimes: dict[str, Runtime] | None = None,
                     source: str = "roofline", **meta) -> Profile:
    """Build a :class:`Profile` whose curves follow the roofline of ``gpu`` for ``model``."""
    k = knobs or RooflineKnobs()
    bw, flops = gpu.hbm_tb_s * 1e12, gpu.bf16_tflops * 1e12
    kvb = model.kv_bytes_per_token
    qdim = model.layers * model.heads * model.head_dim

    def linear(n: float) -> float:
        return max(model.weight_bytes / (bw * k.linear_bw_eff),
                   2 * model.params * n / (flops * k.linear_flops_eff))

    def shared(prefix: float, batch: float) -> float:
        return max(prefix * kvb / (bw * k.attn_bw_eff),
                   4 * qdim * batch * prefix / (flops * k.attn_flops_eff))

    curves = Curves(
        iteration_overhead_s=k.iteration_overhead_s,
        decode_per_seq_s=k.decode_per_seq_s,
        linear=Curve(x=TOKEN_GRID, seconds=[linear(n) for n in TOKEN_GRID]),
        decode_paged=Curve(x=KV_GRID, seconds=[t * kvb / (bw * k.attn_bw_eff) for t in KV_GRID]),
        shared_prefix=Grid2D(x=PREFIX_GRID, y=BATCH_GRID,
                             seconds=[[shared(p, b) for b in BATCH_GRID] for p in PREFIX_GRID]),
        prefill_attention=Curve(x=WORK_GRID, seconds=[4 * qdim * w / (flops * k.attn_flops_eff)
                                                      for w in WORK_GRID]),
    )
    return Profile(schema_version=SCHEMA_VERSION, name=name or f"{gpu.name}/{model.name}",
                   source=source, gpu=gpu, model=model, curves=curves,
                   runtimes=runtimes or {}, **meta)
