"""LLaMA forward pass with random bf16 weights (real shapes), paged KV cache and CUDA graphs.

Presets: ``llama-7b``, ``llama-13b`` (MHA, 32000 vocab) and ``tiny`` (2 layers, GQA with 2 query
heads per KV head, for CPU tests). One forward runs a mixed batch (:mod:`parrotsim.kernels.llama_batch`) of
prefill chunks and decode tokens: RMSNorm, fused qkv projection, rotary embedding + KV-cache
write, causal prefill attention (Triton over the paged cache, or torch SDPA for chunks without
context), decode attention (``"paged"`` or ``"shared_prefix"``), SwiGLU MLP, final norm and the
LM head for the last token of each sequence. One linear path: a one-token forward
(``gemv_single``, default on) uses the fused GEMVs of :mod:`parrotsim.kernels.gemv` (norm / SiLU
prologue, residual epilogue, RoPE and the KV-cache write in the qkv GEMV) with every kernel of
the step chained by programmatic dependent launch; every other batch uses cuBLAS.
:class:`DecodeGraph` captures a decode step in a CUDA graph. The variants measured slower
(skinny GEMMs, L2 self-prefetch, tile overrides) are in
:class:`parrotsim.kernels.experimental.llama_variants.LlamaVariants`.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from parrotsim.kernels.gemv import gemv
from parrotsim.kernels.gemv_rope import gemv_rope_cache
from parrotsim.kernels.grouped_prefix_decode import (
    PrefixGroup,
    grouped_shared_prefix_decode_attention,
    plan_grouped,
)
from parrotsim.kernels.llama_batch import PAGE_SIZE, ForwardBatch
from parrotsim.kernels.llama_ops import rms_norm, rope_and_cache, silu_mul
from parrotsim.kernels.paged_decode import choose_num_splits, paged_decode_attention
from parrotsim.kernels.prefill import prefill_attention
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention


@dataclass(frozen=True)
class LlamaConfig:
    """Model shape. ``head_dim * num_heads == hidden``; ``num_heads % num_kv_heads == 0``."""

    name: str
    vocab_size: int
    hidden: int
    intermediate: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope_theta: float = 10000.0
    rms_eps: float = 1e-5
    max_position: int = 32768

    @staticmethod
    def preset(name: str) -> LlamaConfig:
        """``llama-7b``, ``llama-13b``, ``llama3-8b`` (grouped-query attention) or ``tiny``."""
        return PRESETS[name]

    def num_params(self) -> int:
        """Parameters (embedding and LM head included)."""
        per_layer = self.hidden * (self.num_heads + 2 * self.num_kv_heads) * self.head_dim
        per_layer += self.num_heads * self.head_dim * self.hidden + 3 * self.hidden * self.intermediate
        per_layer += 2 * self.hidden
        return self.num_layers * per_layer + 2 * self.vocab_size * self.hidden + self.hidden


PRESETS = {
    "llama-7b": LlamaConfig("llama-7b", 32000, 4096, 11008, 32, 32, 32, 128),
    "llama-13b": LlamaConfig("llama-13b", 32000, 5120, 13824, 40, 40, 40, 128),
    "llama3-8b": LlamaConfig("llama3-8b", 128256, 4096, 14336, 32, 32, 8, 128),  # GQA, G = 4
    "tiny": LlamaConfig("tiny", 256, 64, 176, 2, 4, 2, 16, max_position=1024),
}


class LlamaModel:
    """Random-weight LLaMA with a paged KV cache of ``num_pages`` pages of 16 tokens.

    ``decode_attention``: "paged" or "shared_prefix"; ``prefill_backend``: "triton" or "sdpa"
    (SDPA only for batches whose prefill chunks all start at position 0);
    ``gemv_single`` (default on: 3.8 vs 4.5 ms per 7B step on the H200, NOTES.md): one-token
    batches use :func:`parrotsim.kernels.gemv.gemv` (fused prologues and residual) and PDL launches for
    every kernel of the layer (``pdl``), with RoPE and the KV-cache write in the qkv GEMV's
    epilogue (``fuse_rope``, :mod:`parrotsim.kernels.gemv_rope`); ``sdpa_backend``:
    None (torch's choice) or "cudnn" / "flash" / "efficient" for the SDPA prefill path.
    """

    def __init__(self, cfg: LlamaConfig, num_pages: int, device: torch.device | str = "cuda",
                 dtype: torch.dtype = torch.bfloat16, seed: int = 0,
                 decode_attention: str = "paged", prefill_backend: str = "sdpa",
                 gemv_single: bool = True, pdl: bool = True) -> None:
        self.cfg, self.device, self.dtype = cfg, torch.device(device), dtype
        self.gemv_single, self.pdl = gemv_single, pdl
        self.sdpa_backend: str | None = None
        # paged decode KV splits (None: heuristic; one-token PDL steps use >= 96-token splits)
        self.decode_splits: int | None = None
        # one-token steps only (kernels/NOTES.md, session 4): qkv GEMV with the RoPE +
        # cache-write epilogue, no rope kernel (default on: 7B 3.625 vs 3.663 ms);
        # merge-kernel warps (2, with 8 KV splits: 3.600 ms vs 3.626 for 4 and 6)
        self.fuse_rope = True
        self.merge_warps = 2
        self.decode_attention, self.prefill_backend = decode_attention, prefill_backend
        gen = torch.Generator(device=self.device).manual_seed(seed)
        hq, hkv, d, h = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.hidden

        def rand(*shape: int, std: float) -> torch.Tensor:
            w = torch.empty(*shape, dtype=dtype, device=self.device)
            return w.normal_(0.0, std, generator=gen)

        def norm_w() -> torch.Tensor:
            return (1.0 + rand(h, std=0.05)).to(dtype)

        self.embed = rand(cfg.vocab_size, h, std=1.0)
        self.layers = []
        for _ in range(cfg.num_layers):
            self.layers.append({
                "ln_in": norm_w(),
                "w_qkv": rand((hq + 2 * hkv) * d, h, std=h ** -0.5),
                "w_o": rand(h, hq * d, std=(hq * d) ** -0.5),
                "ln_post": norm_w(),
                "w_gate_up": rand(2 * cfg.intermediate, h, std=h ** -0.5),
                "w_down": rand(h, cfg.intermediate, std=cfg.intermediate ** -0.5),
            })
        self.norm = norm_w()
        self.lm_head = rand(cfg.vocab_size, h, std=h ** -0.5)
        shape = (cfg.num_layers, num_pages, PAGE_SIZE, hkv, d)
        self.k_cache = torch.zeros(shape, dtype=dtype, device=self.device)
        self.v_cache = torch.zeros(shape, dtype=dtype, device=self.device)
        inv_freq = cfg.rope_theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        ang = torch.arange(cfg.max_position, dtype=torch.float64)[:, None] * inv_freq[None, :]
        self.cos = ang.cos().float().to(self.device)
        self.sin = ang.sin().float().to(self.device)

    # ---------------------------------------------------------------- pieces
    def attention(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                  batch: ForwardBatch, out: torch.Tensor, pdl: bool = False) -> None:
        """Attention of q [T, Hq, D] for one layer (KV already in the cache) into out;
        ``pdl``: the decode kernels use programmatic dependent launch."""
        kc, vc = self.k_cache[layer], self.v_cache[layer]
        tp = batch.num_prefill_tokens
        if tp:
            if self.prefill_backend == "sdpa" and batch.prefill_no_context:
                a = 0
                backends = {"cudnn": SDPBackend.CUDNN_ATTENTION,
                            "flash": SDPBackend.FLASH_ATTENTION,
                            "efficient": SDPBackend.EFFICIENT_ATTENTION}
                for n in batch.prefill_q_lens:
                    qs, ks, vs = (x[a:a + n].transpose(0, 1)[None] for x in (q, k, v))
                    with (sdpa_kernel(backends[self.sdpa_backend]) if self.sdpa_backend
                          else nullcontext()):
                        o = F.scaled_dot_product_attention(
                            qs, ks, vs, is_causal=True, enable_gqa=ks.shape[1] != qs.shape[1])
                    out[a:a + n] = o[0].transpose(0, 1)
                    a += n
            else:
                prefill_attention(q[:tp], kc, vc, batch.prefill_block_tables, batch.prefill_cu_q,
                                  batch.prefill_ctx_lens, batch.prefill_max_q, out=out[:tp])
        if batch.num_decode:
            qd, od = q[tp:], out[tp:]
            n = batch.num_shared_pages
            bt, lens = batch.decode_block_tables, batch.decode_seq_lens
            if self.decode_attention == "shared_prefix" and batch.prefix_groups:
                plan = batch.grouped_plan  # made by the first layer, reused by the others
                if plan is None:
                    groups = [PrefixGroup(bt[first, :pages], pages * PAGE_SIZE, first, rows)
                              for first, rows, pages in batch.prefix_groups]
                    plan = batch.grouped_plan = plan_grouped(qd, kc, groups,
                                                             batch.decode_suffix_tables)
                grouped_shared_prefix_decode_attention(
                    qd, kc, vc, plan.groups, batch.decode_suffix_tables,
                    batch.decode_suffix_lens, out=od, plan=plan)
            elif self.decode_attention == "shared_prefix" and n > 0:
                shared_prefix_decode_attention(qd, kc, vc, bt[0, :n], n * PAGE_SIZE, bt[:, n:],
                                               lens - n * PAGE_SIZE, out=od)
            else:
                splits = self.decode_splits
                if splits is None and pdl:  # batch 1: more, shorter splits (NOTES.md: at
                    # ctx 512, 6 splits 3.70 ms vs 3.81 with the 256-token rule in session 3;
                    # 8 splits with a 2-warp merge 3.600-3.602 vs 3.626 ms in session 4)
                    splits = choose_num_splits(qd.shape[0] * kc.shape[2],
                                               bt.shape[1] * PAGE_SIZE, qd.device,
                                               min_split_tokens=72)
                paged_decode_attention(qd, kc, vc, bt, lens, num_splits=splits, out=od, pdl=pdl,
                                       merge_warps=self.merge_warps if pdl else 4)

    def layer(self, i: int, h: torch.Tensor, batch: ForwardBatch | None) -> torch.Tensor:
        """One decoder layer on the residual stream h [T, hidden]; ``batch=None`` skips rope,
        cache and attention (attention output := q), for timing the linear part alone."""
        cfg = self.cfg
        t = h.shape[0]
        hq, hkv, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        one = t == 1 and self.gemv_single
        pdl = one and self.pdl
        qkv, roped = self.qkv_projection(i, h, batch, one, pdl)
        heads = qkv.view(t, hq + 2 * hkv, d)
        q = heads[:, :hq]
        if batch is None:
            o = q.reshape(t, hq * d)
        else:
            if not roped:
                rope_and_cache(qkv, batch.positions, self.cos, self.sin, batch.slot_mapping,
                               self.k_cache[i], self.v_cache[i], hq, hkv, pdl=pdl)
            o = torch.empty(t, hq, d, dtype=h.dtype, device=h.device)
            self.attention(i, q, heads[:, hq:hq + hkv], heads[:, hq + hkv:], batch, o, pdl=pdl)
            o = o.view(t, hq * d)
        return self.output_and_mlp(i, h, o, one, pdl)

    def qkv_projection(self, i: int, h: torch.Tensor, batch: ForwardBatch | None, one: bool,
                       pdl: bool) -> tuple[torch.Tensor, bool]:
        """``(qkv, roped)``: RMSNorm(h) @ W_qkv^T for layer ``i``; ``roped`` when q and k are
        rotated and k, v written to the cache already (the fused one-token GEMV)."""
        w, eps = self.layers[i], self.cfg.rms_eps
        if not one:
            return rms_norm(h, w["ln_in"], eps) @ w["w_qkv"].t(), False
        if self.fuse_rope and batch is not None:
            cfg = self.cfg
            return gemv_rope_cache(h, w["w_qkv"], w["ln_in"], eps, batch.positions, self.cos,
                                   self.sin, batch.slot_mapping, self.k_cache[i],
                                   self.v_cache[i], cfg.num_heads, cfg.num_kv_heads,
                                   pdl=pdl), True
        return gemv(h, w["w_qkv"], "rmsnorm", w["ln_in"], eps, pdl=pdl), False

    def output_and_mlp(self, i: int, h: torch.Tensor, o: torch.Tensor, one: bool,
                       pdl: bool) -> torch.Tensor:
        """The rest of layer ``i`` on the attention output o [T, Hq*D]: o projection plus
        residual, RMSNorm, SwiGLU MLP plus residual. Returns the new residual stream (the
        one-token GEMVs update h in place)."""
        w, eps = self.layers[i], self.cfg.rms_eps
        if one:
            gemv(o, w["w_o"], residual=h, out=h, pdl=pdl)
            gu = gemv(h, w["w_gate_up"], "rmsnorm", w["ln_post"], eps, pdl=pdl)
            gemv(gu, w["w_down"], "silu_mul", residual=h, out=h, pdl=pdl)
            return h
        h = torch.addmm(h, o, w["w_o"].t())
        gu = rms_norm(h, w["ln_post"], eps) @ w["w_gate_up"].t()
        return torch.addmm(h, silu_mul(gu), w["w_down"].t())

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Final norm + LM head: h [N, hidden] -> logits [N, vocab] fp32."""
        if h.shape[0] == 1 and self.gemv_single:
            out = torch.empty(1, self.cfg.vocab_size, dtype=torch.float32, device=h.device)
            return gemv(h, self.lm_head, "rmsnorm", self.norm, self.cfg.rms_eps, out=out,
                        pdl=self.pdl)
        return (rms_norm(h, self.norm, self.cfg.rms_eps) @ self.lm_head.t()).float()

    # ---------------------------------------------------------------- forward
    @torch.inference_mode()
    def forward(self, batch: ForwardBatch) -> torch.Tensor:
        """Run a mixed batch; returns logits [Np + Nd, vocab] fp32 for the last new token of
        each sequence (prefill chunks first, then decode sequences)."""
        h = self.embed[batch.input_ids]
        for i in range(self.cfg.num_layers):
            h = self.layer(i, h, batch)
        return self.logits(h[batch.logits_index])

    @torch.inference_mode()
    def forward_linear_only(self, num_tokens: int) -> torch.Tensor:
        """All layers without rope, KV cache and attention on ``num_tokens`` random tokens
        (times the token-proportional part of an iteration). Returns hidden [T, hidden]."""
        ids = torch.randint(0, self.cfg.vocab_size, (num_tokens,), device=self.device)
        h = self.embed[ids]
        for i in range(self.cfg.num_layers):
            h = self.layer(i, h, None)
        return h


class DecodeGraph:
    """A decode step (``template``'s shapes: Nd sequences, table width, shared pages or prefix
    groups) captured
    in a CUDA graph. :meth:`run` copies a batch of the same shapes in and replays."""

    def __init__(self, model: LlamaModel, template: ForwardBatch, warmup: int = 2) -> None:
        assert template.num_prefill_tokens == 0 and template.num_decode > 0
        self.model = model
        self.batch = template
        self.names = self.buffer_names(template)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(warmup):
                model.forward(template)
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = model.forward(template)

    @staticmethod
    def buffer_names(template: ForwardBatch) -> list[str]:
        """The batch tensors a replay copies in (shapes fixed by ``template``)."""
        names = ["input_ids", "positions", "slot_mapping", "logits_index",
                 "decode_block_tables", "decode_seq_lens"]
        if template.prefix_groups:  # captured for these groups' rows and prefix pages
            names += ["decode_suffix_tables", "decode_suffix_lens"]
        return names

    def run(self, batch: ForwardBatch | None = None) -> torch.Tensor:
        """Replay (after copying ``batch``'s tensors into the captured buffers)."""
        if batch is not None:
            for name in self.names:
                getattr(self.batch, name).copy_(getattr(batch, name))
        self.graph.replay()
        return self.logits
