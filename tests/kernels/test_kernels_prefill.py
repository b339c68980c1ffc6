"""Causal prefill attention over a paged context vs the fp32 reference (Triton interpreter).

Tolerance: relative L2 error <= 1e-2 for bf16 inputs (see test_kernels_decode.py)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernel_fixtures import make_cache, random_tables, rel_err  # noqa: E402

from parrotsim.kernels.prefill import prefill_attention  # noqa: E402
from parrotsim.kernels.reference import ref_prefill  # noqa: E402

D = 32


@pytest.mark.parametrize("group,ctx,new,bm,bn", [
    (1, [0, 5, 33], [20, 1, 70], 32, 16),
    (4, [0, 64], [45, 16], 64, 32),
    (2, [17], [3], 16, 16),
    (1, [0, 100], [130, 40], 128, 64),
])
def test_prefill_paged_causal(group, ctx, new, bm, bn):
    gen = torch.Generator().manual_seed(sum(ctx) + sum(new) + group)
    hkv = 2
    k, v = make_cache(40, hkv, D, gen)
    totals = [c + n for c, n in zip(ctx, new, strict=True)]
    tables = random_tables(totals, torch.randperm(40, generator=gen))
    t = sum(new)
    q = torch.randn(t, hkv * group, D, generator=gen).to(torch.bfloat16)
    cu = torch.tensor([0] + torch.tensor(new).cumsum(0).tolist(), dtype=torch.int32)
    ctx_t = torch.tensor(ctx, dtype=torch.int32)
    out = torch.full_like(q, float("nan"))
    prefill_attention(q, k, v, tables, cu, ctx_t, max(new), out=out, block_m=bm, block_n=bn,
                      num_warps=4, num_stages=1)
    assert not torch.isnan(out).any()
    assert rel_err(out, ref_prefill(q, k, v, tables, cu, ctx_t)) <= 1e-2
