"""Merge by the last finisher (kernels/last_merge.py, kernels/cascade_last.py) vs the fp32
references under Triton's interpreter, which runs the programs one after another (so the last
program of the grid merges; the GPU's concurrency is checked by bench_gqa's ``err_*`` columns).
Tolerances as in test_kernels_decode.py."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernel_fixtures import make_cache, random_tables, rel_err  # noqa: E402

from parrotsim.kernels.last_merge import counters, launch_decode_last  # noqa: E402
from parrotsim.kernels.paged_decode import paged_decode_attention  # noqa: E402
from parrotsim.kernels.reference import ref_paged_decode, ref_shared_prefix_decode  # noqa: E402
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention  # noqa: E402

D = 32
CPU = torch.device("cpu")


def _check(out, lse, ref_out, ref_lse):
    assert not torch.isnan(out).any() and not torch.isnan(lse).any(), "unwritten output"
    live = ~torch.isinf(ref_lse)
    assert torch.equal(torch.isinf(lse), ~live)
    assert rel_err(out[live], ref_out[live]) <= 1e-2
    assert (out[~live] == 0).all()
    assert (lse[live] - ref_lse[live]).abs().max() <= 1e-3


def _poisoned(b, hq):
    return (torch.full((b, hq, D), float("nan"), dtype=torch.bfloat16),
            torch.full((b, hq), float("nan"), dtype=torch.float32))


def _paged_case(group, seed, lens=(1, 16, 37, 150, 0, 95), hkv=2):
    gen = torch.Generator().manual_seed(seed)
    k, v = make_cache(40, hkv, D, gen)
    tables = random_tables(list(lens), torch.randperm(40, generator=gen)[1:])
    q = torch.randn(len(lens), hkv * group, D, generator=gen).to(torch.bfloat16)
    return q, k, v, tables, torch.tensor(lens, dtype=torch.int32)


@pytest.mark.parametrize("group", [1, 4, 8])
@pytest.mark.parametrize("num_splits", [2, 3, 5])
def test_paged_last_merge_vs_reference(group, num_splits):
    q, k, v, tables, lens = _paged_case(group, 10 * group + num_splits)
    out, lse = _poisoned(q.shape[0], q.shape[1])
    paged_decode_attention(q, k, v, tables, lens, num_splits=num_splits, merge="last",
                           out=out, lse=lse)
    _check(out, lse, *ref_paged_decode(q, k, v, tables, lens))
    assert not counters(CPU, 1).any(), "the merging programs put their counters back to 0"


def test_paged_last_merge_equals_merge_launch():
    q, k, v, tables, lens = _paged_case(4, 3)
    a = paged_decode_attention(q, k, v, tables, lens, num_splits=3, merge="last")
    b = paged_decode_attention(q, k, v, tables, lens, num_splits=3)
    assert (a[0].float() - b[0].float()).abs().max() <= 1e-2
    assert (a[1] - b[1]).abs().nan_to_num(0.0).max() <= 1e-5
    with pytest.raises(ValueError, match="merge"):
        paged_decode_attention(q, k, v, tables, lens, num_splits=3, merge="bogus")


def test_only_the_last_arrival_merges():
    """A row whose counter starts at -1 sees only total - 1 arrivals: no program is its last,
    so its output stays unwritten and its counter is left at total - 1; every other row is
    merged and its counter reset to 0."""
    group, splits = 4, 3
    q, k, v, tables, lens = _paged_case(group, 5, lens=(40, 70, 33))
    b, hq = q.shape[:2]
    cnt = torch.zeros(b * hq, dtype=torch.int32)
    cnt[1 * hq + 5] = -1  # sequence 1, query head 5 (KV head 1)
    out, lse = _poisoned(b, hq)
    launch_decode_last(q, k, v, tables, lens, D ** -0.5, splits, out, lse, cnt=cnt)
    assert torch.isnan(out[1, 5]).all() and torch.isnan(lse[1, 5])
    assert int(cnt[1 * hq + 5]) == splits - 1
    cnt[1 * hq + 5] = 0
    assert not cnt.any()
    ref_out, ref_lse = ref_paged_decode(q, k, v, tables, lens)
    keep = torch.ones(b, hq, dtype=torch.bool)
    keep[1, 5] = False
    assert rel_err(out[keep], ref_out[keep]) <= 1e-2
    assert (lse[keep] - ref_lse[keep]).abs().max() <= 1e-3


@pytest.mark.parametrize(
    "group,prefix_len,suffix,kw",
    [(1, 100, [3, 0, 40, 17, 1], {}),
     (4, 37, [0, 33], {}),
     (8, 37, [20, 5, 0, 64, 16], {"prefix_block_m": 64}),
     (4, 0, [9, 30], {}),
     (8, 100, [0, 0, 0], {"prefix_block_n": 128}),
     (4, 211, [50, 0, 7], {"suffix_splits": 3, "num_stages": 3}),
     (4, 211, [50, 0, 7], {"fast_prefix": True}),
     (8, 128, [3, 0], {"fast_prefix": True}),
     (1, 37, [0, 20, 9], {"fast_prefix": True, "prefix_block_n": 128}),
     (8, 0, [5, 16], {"fast_prefix": True})],
)
def test_cascade_fused_last_vs_reference(group, prefix_len, suffix, kw):
    gen = torch.Generator().manual_seed(prefix_len + 17 * group)
    hkv = 2
    k, v = make_cache(60, hkv, D, gen)
    pool = torch.randperm(60, generator=gen)
    n_pre = -(-prefix_len // 16)
    prefix_pages = pool[:n_pre].to(torch.int32)
    tables = random_tables(suffix, pool[n_pre:])
    q = torch.randn(len(suffix), hkv * group, D, generator=gen).to(torch.bfloat16)
    lens = torch.tensor(suffix, dtype=torch.int32)
    out, lse = _poisoned(len(suffix), hkv * group)
    shared_prefix_decode_attention(q, k, v, prefix_pages, prefix_len, tables, lens,
                                   mode="fused_last", prefix_split_tokens=64, out=out, lse=lse,
                                   **kw)
    _check(out, lse, *ref_shared_prefix_decode(q, k, v, prefix_pages, prefix_len, tables, lens))
    assert not counters(CPU, 1).any()


def test_fast_prefix_needs_fused_last():
    q = torch.zeros(1, 4, D, dtype=torch.bfloat16)
    k = v = torch.zeros(2, 16, 1, D, dtype=torch.bfloat16)
    one = torch.zeros(1, 1, dtype=torch.int32)
    with pytest.raises(ValueError, match="fast_prefix"):
        shared_prefix_decode_attention(q, k, v, one[0], 16, one, torch.ones(1, dtype=torch.int32),
                                       mode="fused", fast_prefix=True)


def test_cascade_fused_last_row_blocks():
    """Batch 20 x G 8 = 160 rows: two 128-row prefix blocks whose rows end mid-block."""
    gen = torch.Generator().manual_seed(4)
    hkv, prefix_len, batch = 1, 48, 20
    k, v = make_cache(80, hkv, D, gen)
    pool = torch.randperm(80, generator=gen).to(torch.int32)
    suffix = torch.randint(0, 40, (batch,), generator=gen).tolist()
    tables = random_tables(suffix, pool[3:])
    q = torch.randn(batch, 8, D, generator=gen).to(torch.bfloat16)
    lens = torch.tensor(suffix, dtype=torch.int32)
    out, lse = shared_prefix_decode_attention(q, k, v, pool[:3], prefix_len, tables, lens,
                                              mode="fused_last")
    _check(out, lse, *ref_shared_prefix_decode(q, k, v, pool[:3], prefix_len, tables, lens))
