""":class:`LlamaVariants`: the LLaMA model with the linear-layer variants measured slower.

Each switch is off by default, so a fresh ``LlamaVariants`` computes exactly what
:class:`parrotsim.kernels.llama.LlamaModel` does; ``kernels/bench_decode.py`` and
``kernels/bench_llama.py`` set them to re-time the session tables (kernels/NOTES.md):

* ``skinny_max_tokens``: batches of at most this many tokens (<= 16; 0 = off) that do not take
  the one-token GEMV path use the fused skinny GEMMs of
  :mod:`parrotsim.kernels.experimental.skinny` (7B decode step 4.89 ms vs 4.46 with cuBLAS);
* ``gemv_prefetch``: per one-token GEMV (``"o"``, ``"gate_up"``, ``"down"``) the L2
  self-prefetch of :func:`parrotsim.kernels.experimental.gemv_prefetch.gemv_prefetch` (0 off, 1
  the rest of the program's own rows, n > 1 also the rows of program pid + n; session 4: slower
  in every form);
* ``o_tiles``: a ``(BN, BK, PRE, num_warps, num_stages)`` override for the one-token o GEMV.
"""

from __future__ import annotations

import torch

from parrotsim.kernels.experimental.gemv_prefetch import gemv_prefetch
from parrotsim.kernels.experimental.skinny import skinny_linear
from parrotsim.kernels.llama import LlamaConfig, LlamaModel
from parrotsim.kernels.llama_batch import ForwardBatch


class LlamaVariants(LlamaModel):
    """:class:`~parrotsim.kernels.llama.LlamaModel` plus ``skinny_max_tokens``,
    ``gemv_prefetch`` and ``o_tiles`` (see module docstring)."""

    def __init__(self, cfg: LlamaConfig, num_pages: int, *args, skinny_max_tokens: int = 0,
                 **kwargs) -> None:
        super().__init__(cfg, num_pages, *args, **kwargs)
        self.skinny_max_tokens = min(skinny_max_tokens, 16)
        self.gemv_prefetch: dict[str, int] = {}
        self.o_tiles: tuple[int, int, int, int, int] | None = None

    def _skinny(self, t: int, one: bool) -> bool:
        return not one and 0 < t <= self.skinny_max_tokens

    def qkv_projection(self, i: int, h: torch.Tensor, batch: ForwardBatch | None, one: bool,
                       pdl: bool) -> tuple[torch.Tensor, bool]:
        if self._skinny(h.shape[0], one):
            w = self.layers[i]
            return skinny_linear(h, w["w_qkv"], "rmsnorm", w["ln_in"], self.cfg.rms_eps), False
        return super().qkv_projection(i, h, batch, one, pdl)

    def output_and_mlp(self, i: int, h: torch.Tensor, o: torch.Tensor, one: bool,
                       pdl: bool) -> torch.Tensor:
        w, eps = self.layers[i], self.cfg.rms_eps
        if one:
            pf = self.gemv_prefetch
            gemv_prefetch(o, w["w_o"], residual=h, out=h, pdl=pdl, tiles=self.o_tiles,
                          prefetch=pf.get("o", 0))
            gu = gemv_prefetch(h, w["w_gate_up"], "rmsnorm", w["ln_post"], eps, pdl=pdl,
                               prefetch=pf.get("gate_up", 0))
            gemv_prefetch(gu, w["w_down"], "silu_mul", residual=h, out=h, pdl=pdl,
                          prefetch=pf.get("down", 0))
            return h
        if self._skinny(h.shape[0], one):
            skinny_linear(o, w["w_o"], residual=h, out=h)
            gu = skinny_linear(h, w["w_gate_up"], "rmsnorm", w["ln_post"], eps)
            skinny_linear(gu, w["w_down"], "silu_mul", residual=h, out=h)
            return h
        return super().output_and_mlp(i, h, o, one, pdl)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        one = h.shape[0] == 1 and self.gemv_single
        if not one and 0 < h.shape[0] <= self.skinny_max_tokens:
            return skinny_linear(h, self.lm_head, "rmsnorm", self.norm, self.cfg.rms_eps).float()
        return super().logits(h)


__all__ = ["LlamaVariants"]
