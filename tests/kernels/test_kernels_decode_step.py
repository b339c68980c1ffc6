"""Session-4 pieces of the one-token decode step (Triton interpreter, small shapes):

* the qkv GEMV with the RoPE + KV-cache-write epilogue against the two-kernel path
  (:func:`parrotsim.kernels.gemv.gemv` then :func:`parrotsim.kernels.llama_ops.rope_and_cache`) and a torch
  reference, for several row tiles (the fused kernel pairs rows d and d + D/2 in one tile);
* the byte ranges of the GEMV's L2 self-prefetch (marked instead of prefetched;
  :mod:`parrotsim.kernels.experimental`, measured slower);
* the tiny model's decode with the fused path, self-prefetch (a no-op in the interpreter) and
  merge warps switched, against the dense reference (slow: ~20 s each under the interpreter).
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

from kernel_fixtures import rel_err  # noqa: E402

from parrotsim.kernels.experimental.gemv_prefetch import gemv_prefetch  # noqa: E402
from parrotsim.kernels.experimental.l2_prefetch import prefetch_bulk, rest_rows  # noqa: E402
from parrotsim.kernels.experimental.llama_variants import LlamaVariants  # noqa: E402
from parrotsim.kernels.gemv import gemv  # noqa: E402
from parrotsim.kernels.gemv_rope import gemv_rope_cache  # noqa: E402
from parrotsim.kernels.llama import LlamaConfig  # noqa: E402
from parrotsim.kernels.llama_batch import PagePool, SeqChunk, build_batch  # noqa: E402
from parrotsim.kernels.llama_ops import rms_norm, rope_and_cache  # noqa: E402
from parrotsim.kernels.reference import ref_llama_forward  # noqa: E402


def _rope_ref(x, pos, cos, sin):
    half = cos.shape[1]
    a, b = x[..., :half].float(), x[..., half:].float()
    c, s = cos[pos], sin[pos]
    return torch.cat([a * c - b * s, b * c + a * s], -1).to(x.dtype)


@pytest.mark.parametrize("bn", [2, 4, 16])
def test_gemv_rope_cache_matches_two_kernel_path(bn):
    gen = torch.Generator().manual_seed(bn)
    hq, hkv, d, k = 4, 2, 16, 80
    n = (hq + 2 * hkv) * d
    x = torch.randn(1, k, generator=gen).bfloat16()
    w = (torch.randn(n, k, generator=gen) / 8).bfloat16()
    nw = (1 + torch.randn(k, generator=gen) / 10).bfloat16()
    ang = torch.arange(64, dtype=torch.float64)[:, None] * 10000.0 ** (
        -torch.arange(0, d, 2, dtype=torch.float64) / d)
    cos, sin = ang.cos().float(), ang.sin().float()
    pos, slot = torch.tensor([37]), torch.tensor([5 * 16 + 3])
    kc = torch.randn(8, 16, hkv, d, generator=gen).bfloat16()
    vc = torch.randn(8, 16, hkv, d, generator=gen).bfloat16()
    kc2, vc2 = kc.clone(), vc.clone()
    tiles = (bn, 16, 32, 4, 2)
    fused = gemv_rope_cache(x, w, nw, 1e-5, pos, cos, sin, slot, kc, vc, hq, hkv, tiles=tiles)
    plain = gemv(x, w, "rmsnorm", nw, 1e-5, tiles=(4, 16, 32, 4, 2))
    rope_and_cache(plain, pos, cos, sin, slot, kc2, vc2, hq, hkv)
    assert torch.equal(fused, plain)
    assert torch.equal(kc, kc2) and torch.equal(vc, vc2)
    ref = (rms_norm(x, nw, 1e-5).float() @ w.float().t()).bfloat16().view(hq + 2 * hkv, d)
    ref[:hq + hkv] = _rope_ref(ref[:hq + hkv], 37, cos, sin)
    assert rel_err(fused.view(-1, d), ref) <= 1e-2
    assert rel_err(kc[5, 3], ref[hq:hq + hkv]) <= 1e-2
    assert rel_err(vc[5, 3], ref[hq + hkv:]) <= 1e-2


@triton.jit
def _mark_kernel(w_ptr, N, K, stride_w, BN: tl.constexpr, PRE: tl.constexpr,
                 MODE: tl.constexpr, AHEAD: tl.constexpr):
    addr, size = rest_rows(w_ptr, tl.program_id(0), N, K, stride_w, BN, PRE, MODE, AHEAD, 32)
    prefetch_bulk(addr, size, MARK=True)


@pytest.mark.parametrize("bn,pre,mode,ahead", [(4, 32, 1, 0), (2, 16, 2, 5), (8, 128, 1, 0)])
def test_rest_rows_ranges(bn, pre, mode, ahead):
    """The self-prefetch ranges: columns PRE..K of the program's own rows (mode 1), plus whole
    rows of program pid + AHEAD (mode 2); none past row N; none when PRE >= K."""
    n, k, stride = 21, 80, 88  # bf16 elements; row stride with padding
    nprog = -(-n // bn)
    w = torch.zeros(n * stride, dtype=torch.bfloat16)
    _mark_kernel[(nprog,)](w, n, k, stride, BN=bn, PRE=pre, MODE=mode, AHEAD=ahead)
    got = w.view(torch.int8).view(n, 2 * stride)
    want = torch.zeros_like(got)
    for p in range(nprog):
        rows = [(r, pre) for r in range(p * bn, min(n, p * bn + bn)) if pre < k]
        if mode == 2:
            rows += [(r, 0) for r in range((p + ahead) * bn, (p + ahead) * bn + bn) if r < n]
        for r, c in rows:
            want[r, 2 * c] = 1
            want[r, 2 * k - 1] = 1
    assert torch.equal(got, want)


def test_gemv_prefetch_flag_keeps_results():
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(1, 64, generator=gen).bfloat16()
    w = (torch.randn(24, 64, generator=gen) / 8).bfloat16()
    ref = gemv(x, w, tiles=(4, 16, 32, 4, 2))
    for pf in (1, 3):
        assert torch.equal(gemv_prefetch(x, w, tiles=(4, 16, 32, 4, 2), prefetch=pf), ref)


@pytest.mark.slow
@pytest.mark.parametrize("o_pf,merge_warps,fuse", [(1, 1, True), (660, 4, False)])
def test_tiny_decode_session4_options(o_pf, merge_warps, fuse):
    model = LlamaVariants(LlamaConfig.preset("tiny"), num_pages=48, device="cpu", seed=3)
    assert model.fuse_rope  # the default since session 4
    model.fuse_rope, model.gemv_prefetch = fuse, {"o": o_pf, "gate_up": 1, "down": 1}
    model.merge_warps, model.decode_splits = merge_warps, 3
    toks = torch.randint(0, 256, (24,), generator=torch.Generator().manual_seed(4)).tolist()
    pages = PagePool(48).alloc(32)
    model.forward(build_batch([SeqChunk(toks[:21], 0, pages)], [], "cpu"))
    ref = ref_llama_forward(model, toks)
    for p in range(21, 24):
        logits = model.forward(build_batch([], [SeqChunk([toks[p]], p, pages)], "cpu"))
        assert rel_err(logits[0], ref[p]) <= 3e-2
