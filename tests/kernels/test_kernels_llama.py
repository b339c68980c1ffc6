"""Tiny LLaMA forward on the CPU (Triton kernels through the interpreter) vs a dense fp32
full-recompute reference. Tolerance: relative L2 error of the logits <= 3e-2 (bf16 weights
and activations against fp32 math; observed ~1e-2). The whole-model tests take 5-35 s each
under the interpreter and are marked ``slow``; one decode step of the default path is not."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernel_fixtures import rel_err  # noqa: E402

from parrotsim.kernels.experimental.llama_variants import LlamaVariants  # noqa: E402
from parrotsim.kernels.experimental.skinny import skinny_linear  # noqa: E402
from parrotsim.kernels.gemv import gemv  # noqa: E402
from parrotsim.kernels.llama import LlamaConfig, LlamaModel  # noqa: E402
from parrotsim.kernels.llama_batch import PagePool, SeqChunk, build_batch  # noqa: E402
from parrotsim.kernels.llama_ops import rms_norm, silu_mul  # noqa: E402
from parrotsim.kernels.reference import ref_llama_forward  # noqa: E402

TOL = 3e-2
CPU = torch.device("cpu")


def _model(skinny_max_tokens=0, **kw):
    """The tiny model; with ``skinny_max_tokens`` the experimental variant that uses the
    skinny GEMMs (measured slower, off by default)."""
    if skinny_max_tokens:
        return LlamaVariants(LlamaConfig.preset("tiny"), num_pages=48, device=CPU, seed=3,
                             skinny_max_tokens=skinny_max_tokens, **kw)
    return LlamaModel(LlamaConfig.preset("tiny"), num_pages=48, device=CPU, seed=3, **kw)


def _tokens(n, seed):
    return torch.randint(0, 256, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def test_one_decode_step_of_the_default_path():
    """The default one-token path (fused GEMVs, RoPE in the qkv GEMV, PDL chain) after an SDPA
    prefill, one step: the quick check of the model's wiring (the slow tests below go further)."""
    model = _model()
    toks = _tokens(10, 1)
    pages = PagePool(48).alloc(16)
    model.forward(build_batch([SeqChunk(toks[:9], 0, pages)], [], CPU))
    logits = model.forward(build_batch([], [SeqChunk([toks[9]], 9, pages)], CPU))
    assert rel_err(logits[0], ref_llama_forward(model, toks)[9]) <= TOL


@pytest.mark.slow
@pytest.mark.parametrize("prefill_backend,skinny,single",
                         [("triton", 1, False), ("sdpa", 0, False), ("sdpa", 0, True)])
def test_prefill_then_decode_matches_full_recompute(prefill_backend, skinny, single):
    model = _model(prefill_backend=prefill_backend, skinny_max_tokens=skinny,
                   gemv_single=single)
    toks = _tokens(40, 1)
    pages = PagePool(48).alloc(64)
    logits = model.forward(build_batch([SeqChunk(toks[:37], 0, pages)], [], CPU))
    ref = ref_llama_forward(model, toks)
    assert rel_err(logits[0], ref[36]) <= TOL
    for p in range(37, 40):
        logits = model.forward(build_batch([], [SeqChunk([toks[p]], p, pages)], CPU))
        assert rel_err(logits[0], ref[p]) <= TOL


@pytest.mark.slow
def test_chunked_prefill_equals_one_shot_and_mixed_batch():
    model = _model(prefill_backend="triton")
    pool = PagePool(48)
    a, b, c = _tokens(45, 2), _tokens(30, 3), _tokens(20, 4)
    pa, pb, pc = pool.alloc(48), pool.alloc(32), pool.alloc(32)
    one_shot = model.forward(build_batch([SeqChunk(a, 0, pa)], [], CPU))[0]
    model.forward(build_batch([SeqChunk(a[:13], 0, pa), SeqChunk(b[:29], 0, pb),
                               SeqChunk(c[:19], 0, pc)], [], CPU))
    # one forward: a's second chunk (with context) and decode tokens of b and c
    out = model.forward(build_batch([SeqChunk(a[13:33], 13, pa)],
                                    [SeqChunk([b[29]], 29, pb), SeqChunk([c[19]], 19, pc)], CPU))
    assert rel_err(out[1], ref_llama_forward(model, b)[-1]) <= TOL
    assert rel_err(out[2], ref_llama_forward(model, c)[-1]) <= TOL
    last = model.forward(build_batch([SeqChunk(a[33:], 33, pa)], [], CPU))[0]
    assert rel_err(last, one_shot) <= TOL
    assert rel_err(last, ref_llama_forward(model, a)[-1]) <= TOL


@pytest.mark.slow
def test_shared_prefix_decode_in_model():
    model = _model(prefill_backend="triton")
    pool = PagePool(48)
    prompt = _tokens(40, 5)
    shared = pool.alloc(32)  # 2 full pages shared physically; tokens 32..39 copied per sequence
    model.forward(build_batch([SeqChunk(prompt[:32], 0, shared)], [], CPU))
    seqs = []
    for s in range(3):
        toks = prompt + _tokens(5 + 4 * s, 10 + s)
        table = shared + pool.alloc(len(toks) + 1 - 32)
        model.forward(build_batch([SeqChunk(toks[32:-1], 32, table)], [], CPU))
        seqs.append((toks, table))
    decodes = [SeqChunk([t[-1]], len(t) - 1, tb) for t, tb in seqs]
    paged = model.forward(build_batch([], decodes, CPU, num_shared_pages=2))
    model.decode_attention = "shared_prefix"
    shared_out = model.forward(build_batch([], decodes, CPU, num_shared_pages=2))
    for i, (toks, _) in enumerate(seqs):
        ref = ref_llama_forward(model, toks)[-1]
        assert rel_err(paged[i], ref) <= TOL
        assert rel_err(shared_out[i], ref) <= TOL
    assert rel_err(shared_out, paged) <= 1e-2


def test_skinny_linear_matches_torch_ops():
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(5, 64, generator=gen).bfloat16()
    w = (torch.randn(48, 64, generator=gen) / 8).bfloat16()
    nw = (1 + torch.randn(64, generator=gen) / 10).bfloat16()
    res = torch.randn(5, 48, generator=gen).bfloat16()
    y = skinny_linear(x, w, "rmsnorm", nw, 1e-5, residual=res.clone())
    assert rel_err(y, res.float() + rms_norm(x, nw, 1e-5).float() @ w.float().t()) <= 1e-2
    y1 = skinny_linear(x[:1], w, "rmsnorm", nw, 1e-5, residual=res[:1].clone(), use_dot=False)
    assert rel_err(y1, y[:1]) <= 1e-2
    gu = torch.randn(3, 128, generator=gen).bfloat16()
    y = skinny_linear(gu, w, "silu_mul")
    assert rel_err(y, silu_mul(gu).float() @ w.float().t()) <= 1e-2
    ref_norm = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)
    assert rel_err(rms_norm(x, nw, 1e-5), ref_norm * nw.float()) <= 1e-2
    g, u = gu.float().chunk(2, -1)
    assert rel_err(silu_mul(gu), torch.nn.functional.silu(g) * u) <= 1e-2


@pytest.mark.parametrize("tiles", [(16, 16, 32, 4, 2), (8, 32, 16, 2, 3), (32, 64, 128, 4, 1)])
def test_gemv_matches_torch_ops(tiles):
    """The PDL GEMV (prefetched first chunk + pipelined rest, K not a multiple of the tiles)
    against torch for every prologue, with an in-place residual and an fp32 output."""
    gen = torch.Generator().manual_seed(sum(tiles))
    k, n = 80, 40
    x = torch.randn(1, k, generator=gen).bfloat16()
    w = (torch.randn(n, k, generator=gen) / 8).bfloat16()
    nw = (1 + torch.randn(k, generator=gen) / 10).bfloat16()
    res = torch.randn(1, n, generator=gen).bfloat16()
    y = gemv(x, w, "rmsnorm", nw, 1e-5, tiles=tiles)
    assert rel_err(y, rms_norm(x, nw, 1e-5).float() @ w.float().t()) <= 1e-2
    h = res.clone()
    gemv(x, w, residual=h, out=h, tiles=tiles)
    assert rel_err(h, res.float() + x.float() @ w.float().t()) <= 1e-2
    gu = torch.randn(1, 2 * k, generator=gen).bfloat16()
    y = gemv(gu, w, "silu_mul", out=torch.empty(1, n), tiles=tiles)
    assert y.dtype == torch.float32
    assert rel_err(y, silu_mul(gu).float() @ w.float().t()) <= 1e-2


def test_every_measured_model_has_a_matching_roofline_spec():
    """``parrotsim calibrate --model M`` measures ``PRESETS[M]`` and fits with ``MODELS[M]``: the
    two must agree on the shape (llama3-8b: 8 KV heads for 32 query heads) and parameters."""
    from parrotsim.calibrate.roofline import MODELS
    from parrotsim.kernels.llama import PRESETS

    for name, cfg in PRESETS.items():
        if name == "tiny":
            continue
        spec = MODELS[name]
        assert (cfg.num_layers, cfg.hidden, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim,
                cfg.intermediate, cfg.vocab_size) == (spec.layers, spec.hidden, spec.heads,
                                                      spec.kv_heads, spec.head_dim,
                                                      spec.intermediate, spec.vocab)
        assert abs(cfg.num_params() / spec.params - 1) < 0.01
    assert PRESETS["llama3-8b"].num_heads // PRESETS["llama3-8b"].num_kv_heads == 4
