"""Paged split-KV decode and shared-prefix decode vs fp32 references (Triton interpreter).

Tolerance (bf16 inputs, fp32 reference): relative L2 error of the output <= 1e-2 (observed
~3e-3: P is rounded to bf16 before the PV product and the output is stored in bf16); absolute
LSE error <= 1e-3 (LSE is computed in fp32 from exact bf16 products).
"""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernel_fixtures import make_cache, random_tables, rel_err  # noqa: E402

from parrotsim.kernels.paged_decode import paged_decode_attention  # noqa: E402
from parrotsim.kernels.reference import ref_paged_decode, ref_shared_prefix_decode  # noqa: E402
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention  # noqa: E402

OUT_TOL = 1e-2
LSE_TOL = 1e-3
D = 32


def _check(out, lse, ref_out, ref_lse):
    assert not torch.isnan(out).any() and not torch.isnan(lse).any(), "unwritten output"
    live = ~torch.isinf(ref_lse)
    assert torch.equal(torch.isinf(lse), ~live)
    assert rel_err(out[live], ref_out[live]) <= OUT_TOL
    assert (out[~live] == 0).all()
    assert (lse[live] - ref_lse[live]).abs().max() <= LSE_TOL


def _poisoned(b, hq, dtype):
    return (torch.full((b, hq, D), float("nan"), dtype=dtype),
            torch.full((b, hq), float("nan"), dtype=torch.float32))


@pytest.mark.parametrize("group", [1, 4, 8])
@pytest.mark.parametrize("num_splits", [None, 1, 3])
def test_paged_decode_ragged(group, num_splits):
    gen = torch.Generator().manual_seed(100 * group + (num_splits or 0))
    hkv = 2
    lens = [1, 16, 37, 150, 0, 95]
    k, v = make_cache(40, hkv, D, gen)
    tables = random_tables(lens, torch.randperm(40, generator=gen)[1:])
    q = torch.randn(len(lens), hkv * group, D, generator=gen).to(torch.bfloat16)
    seq_lens = torch.tensor(lens, dtype=torch.int32)
    out, lse = _poisoned(len(lens), hkv * group, q.dtype)
    paged_decode_attention(q, k, v, tables, seq_lens, num_splits=num_splits, out=out, lse=lse)
    _check(out, lse, *ref_paged_decode(q, k, v, tables, seq_lens))


def test_paged_decode_batch1_scale():
    gen = torch.Generator().manual_seed(7)
    k, v = make_cache(12, 1, D, gen)
    tables = random_tables([170], torch.randperm(12, generator=gen))
    q = torch.randn(1, 4, D, generator=gen).to(torch.bfloat16)
    seq_lens = torch.tensor([170], dtype=torch.int32)
    out, lse = paged_decode_attention(q, k, v, tables, seq_lens, sm_scale=0.3, num_splits=2)
    _check(out, lse, *ref_paged_decode(q, k, v, tables, seq_lens, sm_scale=0.3))


@pytest.mark.parametrize(
    "group,prefix_len,suffix,mode",
    [(1, 100, [3, 0, 40, 17, 1], "fused"),
     (4, 64, [0, 33], "separate"),
     (8, 37, [20, 5, 0, 64, 16], "fused"),
     (4, 0, [9, 30], "chained"),
     (1, 100, [0, 64, 33, 17], "concurrent"),
     (8, 37, [20, 5, 0, 64, 16], "concurrent"),
     (8, 100, [0, 1, 50], "chained"),
     (1, 211, [0], "separate")],
)
def test_shared_prefix_vs_reference(group, prefix_len, suffix, mode):
    gen = torch.Generator().manual_seed(prefix_len + 17 * group)
    hkv = 2
    k, v = make_cache(60, hkv, D, gen)
    pool = torch.randperm(60, generator=gen)
    n_pre = -(-prefix_len // 16)
    prefix_pages = pool[:n_pre].to(torch.int32)
    tables = random_tables(suffix, pool[n_pre:])
    b = len(suffix)
    q = torch.randn(b, hkv * group, D, generator=gen).to(torch.bfloat16)
    lens = torch.tensor(suffix, dtype=torch.int32)
    out, lse = _poisoned(b, hkv * group, q.dtype)
    shared_prefix_decode_attention(q, k, v, prefix_pages, prefix_len, tables, lens, mode=mode,
                                   prefix_split_tokens=64, out=out, lse=lse)
    _check(out, lse, *ref_shared_prefix_decode(q, k, v, prefix_pages, prefix_len, tables, lens))


@pytest.mark.parametrize("batch,group", [(20, 1), (20, 8)])
def test_shared_prefix_row_blocks_match_paged(batch, group):
    """Many rows (several BM row blocks, BM 32 and 128) and the paged kernel over tables whose
    first pages all point at the same physical prefix pages give the same answer."""
    gen = torch.Generator().manual_seed(batch * group)
    hkv, prefix_len = 1, 48
    k, v = make_cache(80, hkv, D, gen)
    pool = torch.randperm(80, generator=gen).to(torch.int32)
    suffix = torch.randint(0, 40, (batch,), generator=gen).tolist()
    tables = random_tables(suffix, pool[3:])
    q = torch.randn(batch, hkv * group, D, generator=gen).to(torch.bfloat16)
    lens = torch.tensor(suffix, dtype=torch.int32)
    out, lse = shared_prefix_decode_attention(q, k, v, pool[:3], prefix_len, tables, lens)
    ref = ref_shared_prefix_decode(q, k, v, pool[:3], prefix_len, tables, lens)
    _check(out, lse, *ref)
    full = torch.cat([pool[:3].expand(batch, 3), tables], dim=1)
    out2, lse2 = paged_decode_attention(q, k, v, full, lens + prefix_len)
    _check(out2, lse2, *ref)
