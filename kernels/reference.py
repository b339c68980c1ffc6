"""Torch fp32 references for every kernel in this package (slow, loop over sequences).

All references upcast inputs to fp32, gather each sequence's KV from the paged cache and do
dense softmax attention. LSEs are natural-log: ``ln sum_j exp(sm_scale * q.k_j)``.
"""

from __future__ import annotations

import torch

from parrotsim.kernels._common import default_scale


def gather_kv(cache: torch.Tensor, pages: torch.Tensor, length: int) -> torch.Tensor:
    """Tokens ``0..length-1`` of a paged sequence: cache [P, page, Hkv, D] -> [length, Hkv, D]."""
    page = cache.shape[1]
    n = -(-length // page)
    return cache[pages[:n].long()].reshape(n * page, *cache.shape[2:])[:length]


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
           mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Dense GQA attention in fp32.

    q [Tq, Hq, D], k/v [Tk, Hkv, D], mask bool [Tq, Tk] (True = attend) ->
    (out [Tq, Hq, D] fp32, lse [Tq, Hq] fp32). Rows with no key give out 0 and lse -inf.
    """
    g = q.shape[1] // k.shape[1]
    kf = k.float().repeat_interleave(g, dim=1)
    vf = v.float().repeat_interleave(g, dim=1)
    s = torch.einsum("qhd,khd->hqk", q.float(), kf) * scale
    if mask is not None:
        s = s.masked_fill(~mask[None], float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - torch.where(torch.isinf(lse), 0.0, lse)[..., None])
    out = torch.einsum("hqk,khd->qhd", p, vf)
    return out, lse.transpose(0, 1).contiguous()


def ref_paged_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                     block_tables: torch.Tensor, seq_lens: torch.Tensor,
                     sm_scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference for :func:`parrotsim.kernels.paged_decode.paged_decode_attention` (fp32 out, lse)."""
    scale = default_scale(q.shape[-1], sm_scale)
    outs, lses = [], []
    for b in range(q.shape[0]):
        n = int(seq_lens[b])
        k = gather_kv(k_cache, block_tables[b], n)
        v = gather_kv(v_cache, block_tables[b], n)
        o, lse = attend(q[b:b + 1], k, v, scale)
        outs.append(o[0])
        lses.append(lse[0])
    return torch.stack(outs), torch.stack(lses)


def ref_shared_prefix_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                             prefix_pages: torch.Tensor, prefix_len: int,
                             suffix_block_tables: torch.Tensor, suffix_lens: torch.Tensor,
                             sm_scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference for :func:`parrotsim.kernels.shared_prefix_decode.shared_prefix_decode_attention`:
    every sequence attends to the prefix tokens followed by its own suffix tokens."""
    scale = default_scale(q.shape[-1], sm_scale)
    kp = gather_kv(k_cache, prefix_pages, prefix_len)
    vp = gather_kv(v_cache, prefix_pages, prefix_len)
    outs, lses = [], []
    for b in range(q.shape[0]):
        n = int(suffix_lens[b])
        k = torch.cat([kp, gather_kv(k_cache, suffix_block_tables[b], n)])
        v = torch.cat([vp, gather_kv(v_cache, suffix_block_tables[b], n)])
        o, lse = attend(q[b:b + 1], k, v, scale)
        outs.append(o[0])
        lses.append(lse[0])
    return torch.stack(outs), torch.stack(lses)


def ref_prefill(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                block_tables: torch.Tensor, cu_q: torch.Tensor, ctx_lens: torch.Tensor,
                sm_scale: float | None = None) -> torch.Tensor:
    """Reference for :func:`parrotsim.kernels.prefill.prefill_attention`: new token i of sequence s sits
    at position ``ctx_lens[s] + i`` and attends causally to cached tokens ``0..ctx+i``."""
    scale = default_scale(q.shape[-1], sm_scale)
    out = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    for s in range(cu_q.numel() - 1):
        a, e = int(cu_q[s]), int(cu_q[s + 1])
        ctx, n = int(ctx_lens[s]), e - a
        if n == 0:
            continue
        k = gather_kv(k_cache, block_tables[s], ctx + n)
        v = gather_kv(v_cache, block_tables[s], ctx + n)
        pos = ctx + torch.arange(n, device=q.device)
        mask = torch.arange(ctx + n, device=q.device)[None, :] <= pos[:, None]
        out[a:e] = attend(q[a:e], k, v, scale, mask)[0]
    return out


def ref_causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                         scale: float) -> torch.Tensor:
    """Causal attention on contiguous tensors q [T, Hq, D], k/v [T, Hkv, D] -> fp32 [T, Hq, D]."""
    t = q.shape[0]
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    return attend(q, k, v, scale, mask)[0]


def ref_llama_forward(model, token_ids: list[int]) -> torch.Tensor:
    """Dense full-recompute reference of :class:`parrotsim.kernels.llama.LlamaModel` in fp32 (bf16
    weights upcast, no KV cache): token_ids of one sequence -> logits [T, vocab] fp32."""
    cfg = model.cfg
    hq, hkv, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    t = len(token_ids)
    ids = torch.tensor(token_ids, device=model.device)

    def norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.rms_eps) * w.float()

    def rope(x: torch.Tensor) -> torch.Tensor:
        c, s = model.cos[:t][:, None], model.sin[:t][:, None]
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)

    h = model.embed[ids].float()
    for w in model.layers:
        qkv = (norm(h, w["ln_in"]) @ w["w_qkv"].float().t()).view(t, hq + 2 * hkv, d)
        q, k, v = rope(qkv[:, :hq]), rope(qkv[:, hq:hq + hkv]), qkv[:, hq + hkv:]
        o = ref_causal_attention(q, k, v, d ** -0.5).reshape(t, hq * d)
        h = h + o @ w["w_o"].float().t()
        gu = norm(h, w["ln_post"]) @ w["w_gate_up"].float().t()
        g, u = gu.chunk(2, dim=-1)
        h = h + (torch.nn.functional.silu(g) * u) @ w["w_down"].float().t()
    return norm(h, model.norm) @ model.lm_head.float().t()
